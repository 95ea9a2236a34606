"""An FNO-style spectral conv (rfft -> complex weights on the low modes -> irfft) forward + backward on the XLA CPU
device: does the legacy run train through it? Run with XLA_USE_BF16=1 and without (f32)."""
import os

import torch
import torch_xla

dev = torch_xla.device()
torch.manual_seed(0)
lift = torch.nn.Linear(2, 8).to(dev)
w = torch.nn.Parameter(torch.randn(8, 8, 6, dtype=torch.cfloat, device=dev) * 0.1)
x = torch.randn(4, 32, 2, device=dev)
try:
    h = lift(x).transpose(1, 2)                      # (b, c, n)
    h_ft = torch.fft.rfft(h)                         # (b, c, 17) complex
    out_ft = torch.einsum("bix,iox->box", h_ft[..., :6], w)
    full = torch.zeros(4, 8, 17, dtype=torch.cfloat, device=dev)
    full[..., :6] = out_ft
    y = torch.fft.irfft(full, n=32)
    loss = y.pow(2).mean()
    loss.backward()
    torch_xla.sync()
    print("switch", os.environ.get("XLA_USE_BF16"), "ok loss", loss.item(), "grad", lift.weight.grad.abs().sum().item())
except Exception as e:  # noqa: BLE001
    print("switch", os.environ.get("XLA_USE_BF16"), "RAISES", type(e).__name__, str(e).strip().splitlines()[0][:200])
