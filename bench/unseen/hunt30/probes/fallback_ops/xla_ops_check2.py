# hunt30: which ops raise on bf16 operands on the XLA CPU device (torch-xla 2.9)? one direct run, outside verify
import torch, torch.nn.functional as F, torch_xla
dev = torch_xla.device()
bf = torch.bfloat16
h = torch.rand(8, 16).to(dev).to(bf).add(0.1).requires_grad_(True)
img = torch.rand(2, 3, 8, 8).to(dev).to(bf).requires_grad_(True)
ops = {
 "Beta.rsample": lambda: torch.distributions.Beta(h, h).rsample().mean(),
 "Gamma.rsample": lambda: torch.distributions.Gamma(h, torch.ones_like(h)).rsample().mean(),
 "Dirichlet.rsample": lambda: torch.distributions.Dirichlet(h).rsample().mean(),
 "poisson": lambda: torch.poisson(h.detach()).mean(),
 "multinomial": lambda: torch.multinomial(h.detach().softmax(-1), 2).float().mean(),
 "bucketize": lambda: torch.bucketize(h.detach(), torch.linspace(0, 1, 5, device=dev, dtype=bf)).float().mean(),
 "searchsorted": lambda: torch.searchsorted(torch.linspace(0, 1, 5, device=dev, dtype=bf), h.detach()).float().mean(),
 "grid_sample": lambda: F.grid_sample(img, torch.rand(2, 4, 4, 2, device=dev, dtype=bf) * 2 - 1, align_corners=False).mean(),
 "cdist": lambda: torch.cdist(h, h).mean(),
 "pdist": lambda: F.pdist(h).mean(),
 "kthvalue": lambda: h.kthvalue(3, dim=1).values.mean(),
 "nanmedian": lambda: h.nanmedian(),
 "mode": lambda: h.detach().mode(1).values.mean(),
 "logcumsumexp": lambda: h.logcumsumexp(1).mean(),
 "cummax": lambda: h.cummax(1).values.mean(),
 "histc": lambda: torch.histc(h.detach(), 4, 0, 1).mean(),
 "lgamma": lambda: h.lgamma().mean(),
 "polygamma": lambda: torch.polygamma(1, h).mean(),
 "erfinv": lambda: (h * 0.5).erfinv().mean(),
 "special.i0e": lambda: torch.special.i0e(h).mean(),
 "linalg.lstsq": lambda: torch.linalg.lstsq(h[:, :8] @ h[:, :8].T + torch.eye(8, device=dev, dtype=bf), h[:, :2]).solution.mean(),
 "linalg.matrix_exp": lambda: torch.linalg.matrix_exp(h[:, :8] * 0.1).mean(),
 "linalg.slogdet": lambda: torch.linalg.slogdet(h[:, :8] @ h[:, :8].T + torch.eye(8, device=dev, dtype=bf)).logabsdet,
 "interp.bicubic": lambda: F.interpolate(img, scale_factor=2, mode="bicubic").mean(),
 "adaptive_max_pool2d": lambda: F.adaptive_max_pool2d(img, 3).mean(),
 "trapezoid": lambda: torch.trapezoid(h, dim=1).mean(),
 "renorm": lambda: h.renorm(2, 0, 1.0).mean(),
 "unique": lambda: torch.unique(h.detach()).float().mean(),
 "nn.GRU": lambda: torch.nn.GRU(16, 8, batch_first=True).to(dev).to(bf)(h[None])[0].mean(),
 "nn.LSTM": lambda: torch.nn.LSTM(16, 8, batch_first=True).to(dev).to(bf)(h[None])[0].mean(),
}
for name, f in ops.items():
    try:
        out = f()
        if out.requires_grad:
            out.backward()
        torch_xla.sync(); v = out.item()
        print(f"{name:20s} ok {out.dtype} {v:.4f}")
    except Exception as e:
        print(f"{name:20s} ERR {type(e).__name__}: {str(e).splitlines()[0][:100]}")
    h.grad = None; img.grad = None
