import torch, torch_xla
dev = torch_xla.device()
h = torch.randn(8, 64).to(dev).to(torch.bfloat16).requires_grad_(True)
sq = lambda: (h[:8, :8] @ h[:8, :8].T) + torch.eye(8, device=dev, dtype=torch.bfloat16)
ops = {
 "fft.fft": lambda: torch.fft.fft(h).real.mean(),
 "Tensor.stft": lambda: h.stft(16, window=torch.hann_window(16, device=dev, dtype=torch.bfloat16), return_complex=True).abs().mean(),
 "torch.stft": lambda: torch.stft(h, 16, window=torch.hann_window(16, device=dev, dtype=torch.bfloat16), return_complex=True).abs().mean(),
 "linalg.svdvals": lambda: torch.linalg.svdvals(h[:8, :8]).sum(),
 "linalg.eigvalsh": lambda: torch.linalg.eigvalsh(sq()).sum(),
 "linalg.inv": lambda: torch.linalg.inv(sq()).trace(),
 "special.digamma": lambda: torch.special.digamma(h.abs() + 1).mean(),
 "median": lambda: h.median(),
 "fft.rfft": lambda: torch.fft.rfft(h).abs().mean(),
}
for name, f in ops.items():
    try:
        out = f(); out.backward(); torch_xla.sync(); print(f"{name:16s} ok {out.dtype} {out.item():.4f}")
    except Exception as e:
        print(f"{name:16s} ERR {type(e).__name__}: {str(e).splitlines()[0][:110]}")
    h.grad = None
