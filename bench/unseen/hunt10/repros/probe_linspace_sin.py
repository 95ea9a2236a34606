"""torch-xla 2.9: unary math of a bf16 `torch.linspace` made on the device comes out float32."""
import torch, torch_xla
d = torch_xla.device()
bf = torch.bfloat16
cases = {
    "linspace(dtype=bf16)": lambda: torch.linspace(-5, 5, 50, device=d, dtype=bf),
    "linspace(dtype=bf16).unsqueeze(1)": lambda: torch.linspace(-5, 5, 50, device=d, dtype=bf).unsqueeze(1),
    "linspace(device).to(bf16)": lambda: torch.linspace(-5, 5, 50, device=d).to(bf),
    "arange(dtype=bf16)": lambda: torch.arange(0, 50, device=d, dtype=bf),
    "randn(dtype=bf16)": lambda: torch.randn(50, device=d, dtype=bf),
    "linspace cpu bf16 .to(d)": lambda: torch.linspace(-5, 5, 50, dtype=bf).to(d),
}
for name, mk in cases.items():
    t = mk()
    out = {op: getattr(torch, op)(t).dtype for op in ("sin", "cos", "exp", "tanh", "sqrt", "abs", "neg")}
    out["t*2"] = (t * 2.0).dtype
    out["t+t"] = (t + t).dtype
    s = torch.sin(t)
    torch_xla.sync()
    print(f"{name:36s} t={t.dtype} ->", {k: str(v).replace('torch.', '') for k, v in out.items()}, "sin.cpu()", s.cpu().dtype)
