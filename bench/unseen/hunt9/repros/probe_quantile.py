import os, torch, torch_xla.core.xla_model as xm
dev = xm.xla_device()
bf = os.environ.get("XLA_USE_BF16")
dt = torch.float32 if bf else torch.bfloat16
print("XLA_USE_BF16", bf, "dtype used", dt)
x = torch.randn(4, 16, device=dev, dtype=dt)
for name, fn in [("quantile", lambda: torch.quantile(x, torch.tensor([0.25, 0.5], device=dev, dtype=dt), dim=-1)),
                 ("quantile scalar q", lambda: torch.quantile(x, 0.5, dim=-1)),
                 ("nanquantile", lambda: torch.nanquantile(x, 0.5, dim=-1)),
                 ("median", lambda: torch.median(x, dim=-1).values),
                 ("kthvalue", lambda: torch.kthvalue(x, 3, dim=-1).values)]:
    try:
        r = fn(); xm.mark_step(); print(name, "->", r.dtype, r.cpu().flatten()[:3].tolist())
    except Exception as e:
        print(name, "RAISES", type(e).__name__, str(e).splitlines()[0][:200])
try:
    torch.zeros((), device=dev, dtype=torch.Generator().dtype)
except Exception as e:
    print("generator.dtype RAISES", type(e).__name__, e)
