import os, torch, torch_xla.core.xla_model as xm
dev = xm.xla_device()
x = torch.randn(4, 16, device=dev, requires_grad=True)
for name, f in [("view_as_real", lambda s: torch.view_as_real(s).pow(2).sum(-1).add(1e-9).sqrt()),
                ("real/imag", lambda s: (s.real.pow(2) + s.imag.pow(2) + 1e-9).sqrt()),
                ("abs", lambda s: s.abs())]:
    try:
        s = torch.fft.rfft(x * 2, dim=-1)
        m = f(s); m.sum().backward(); xm.mark_step()
        print(name, "ok", s.dtype, m.dtype, m.cpu()[0, :3].tolist(), x.grad.dtype)
    except Exception as e:
        print(name, "RAISES", str(e).splitlines()[0][:150])
    x.grad = None
xb = x.detach().to(torch.bfloat16).requires_grad_()
try:
    s = torch.fft.rfft(xb, dim=-1)
    print("bf16 rfft ok", s.dtype)
except Exception as e:
    print("bf16 rfft RAISES", str(e).splitlines()[0][:150])
