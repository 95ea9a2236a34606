"""Which ops run, forward and backward, on real bf16 XLA tensors (no switch), and under XLA_USE_BF16=1 (f32 tensors,
bf16 on the device)? Run twice: `PJRT_DEVICE=CPU python probe_ops_bf16_grad.py` and with XLA_USE_BF16=1."""
import os
import torch
import torch.nn.functional as F
import torch_xla

dev = torch_xla.device()
switch = os.environ.get("XLA_USE_BF16")
dt = torch.float32 if switch else torch.bfloat16
print("XLA_USE_BF16", switch, "tensor dtype", dt)
torch.manual_seed(0)


def leaf(*shape, low=None):
    t = torch.rand(*shape) + 0.5 if low == "pos" else torch.randn(*shape)
    return t.to(dev, dt).requires_grad_(True)


def run(name, fn, grad=True):
    try:
        out = fn()
        if grad:
            out.float().sum().backward() if out.dtype != torch.float32 else out.sum().backward()
        torch_xla.sync()
        print(f"{name:34s} ok   ->", out.dtype, round(float(out.float().sum().item()), 3))
    except Exception as e:
        msg = str(e).strip().splitlines()[0][:150] if str(e).strip() else ""
        print(f"{name:34s} RAISES {type(e).__name__}: {msg}")
        torch_xla.sync()


a, b = leaf(6, 4), leaf(5, 4)
run("cdist fwd", lambda: torch.cdist(a.detach(), b.detach()), grad=False)
run("cdist fwd+bwd", lambda: torch.cdist(leaf(6, 4), leaf(5, 4)))
run("pdist fwd+bwd", lambda: F.pdist(leaf(6, 4)))
run("lgamma fwd+bwd", lambda: torch.lgamma(leaf(8, low="pos")))
run("digamma fwd+bwd", lambda: torch.digamma(leaf(8, low="pos")))
run("xlogy fwd+bwd", lambda: torch.xlogy(leaf(8, low="pos"), leaf(8, low="pos")))
run("logaddexp fwd+bwd", lambda: torch.logaddexp(leaf(8), leaf(8)))
run("erfinv fwd+bwd", lambda: torch.erfinv(torch.tanh(leaf(8))))
run("special.ndtri fwd", lambda: torch.special.ndtri(torch.sigmoid(leaf(8))).detach(), grad=False)
run("histc fwd", lambda: torch.histc(leaf(64).detach(), bins=8, min=-2, max=2), grad=False)
run("bucketize (bf16 edges)", lambda: torch.bucketize(leaf(16).detach(), torch.linspace(-1, 1, 5).to(dev, dt)), grad=False)
run("searchsorted", lambda: torch.searchsorted(torch.linspace(-1, 1, 5).to(dev, dt), leaf(16).detach()), grad=False)
run("bincount weights", lambda: torch.bincount(torch.randint(0, 5, (20,)).to(dev), weights=leaf(20).detach()), grad=False)
run("median fwd+bwd", lambda: leaf(9).median())
run("kthvalue fwd+bwd", lambda: leaf(9).kthvalue(3).values)
run("cumprod fwd+bwd", lambda: torch.cumprod(leaf(8, low="pos"), 0))
run("logcumsumexp fwd+bwd", lambda: torch.logcumsumexp(leaf(8), 0))
run("grid_sample fwd+bwd", lambda: F.grid_sample(leaf(1, 2, 5, 5), torch.tanh(leaf(1, 3, 3, 2)), align_corners=False))
run("interpolate bicubic fwd+bwd", lambda: F.interpolate(leaf(1, 2, 5, 5), scale_factor=2, mode="bicubic"))
run("embedding_bag psw fwd+bwd", lambda: F.embedding_bag(torch.randint(0, 6, (10,)).to(dev), leaf(6, 4),
                                                       torch.tensor([0, 4]).to(dev), mode="sum", per_sample_weights=leaf(10)))
run("gaussian_nll_loss fwd+bwd", lambda: F.gaussian_nll_loss(leaf(8), leaf(8), leaf(8, low="pos")))
run("poisson_nll_loss fwd+bwd", lambda: F.poisson_nll_loss(leaf(8), leaf(8, low="pos"), full=True))
run("polygamma(1) fwd", lambda: torch.polygamma(1, leaf(8, low="pos")).detach(), grad=False)
run("i0 fwd", lambda: torch.i0(leaf(8)).detach(), grad=False)
run("Gamma rsample fwd+bwd", lambda: torch.distributions.Gamma(leaf(8, low="pos"), leaf(8, low="pos")).rsample())
run("Beta rsample fwd+bwd", lambda: torch.distributions.Beta(leaf(8, low="pos"), leaf(8, low="pos")).rsample())
run("unfold/fold fwd+bwd", lambda: F.fold(F.unfold(leaf(1, 2, 6, 6), 3), (6, 6), 3))
run("trapezoid fwd+bwd", lambda: torch.trapezoid(leaf(8)))
run("linalg.vector_norm fwd+bwd", lambda: torch.linalg.vector_norm(leaf(8)))
run("nanmedian fwd", lambda: leaf(9).detach().nanmedian(), grad=False)
run("unique", lambda: torch.unique(leaf(9).detach().round()), grad=False)
