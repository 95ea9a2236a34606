"""The by-hand fix BFM155 suggests (`op(x.float()).to(x.dtype)`), applied to the ops of gaps 1-2, on real bf16 tensors
(no switch) on the XLA CPU device: forward + backward + sync, each in one process."""
import torch
import torch.nn.functional as F
import torch_xla
import torch.distributions as D

dev = torch_xla.device()
torch.manual_seed(0)
BF = torch.bfloat16


def t(*shape, pos=False):
    x = torch.randn(*shape)
    if pos:
        x = x.abs() + 0.5
    return x.to(dev).to(BF).requires_grad_(True)


def spd(n=5):
    a = t(n, n)
    return a @ a.T + n * torch.eye(n, device=dev, dtype=BF)


def ctc():
    lp = t(12, 2, 6).log_softmax(-1)
    tg = torch.randint(1, 6, (2, 4), device=dev)
    n = torch.full((2,), 12, dtype=torch.long, device=dev)
    s = torch.full((2,), 4, dtype=torch.long, device=dev)
    return torch.nn.CTCLoss()(lp.float(), tg, n, s).to(BF)


OPS = {
    "nn.CTCLoss(lp.float())": ctc,
    "MVN(.float()).log_prob": lambda: D.MultivariateNormal(t(5).float(), covariance_matrix=spd().float()).log_prob(t(5).float()).to(BF),
    "StudentT(.float()).rsample": lambda: D.StudentT(4.0, t(8).float(), t(8, pos=True).float()).rsample().to(BF),
    "torch.cholesky(A.float())": lambda: torch.cholesky(spd().float()).to(BF),
    "matrix_norm(W.float(), 2)": lambda: torch.linalg.matrix_norm(t(6, 6).float(), ord=2).to(BF),
    "MultiMarginLoss(s.float())": lambda: torch.nn.MultiMarginLoss()(t(4, 5).float(), torch.tensor([0, 1, 2, 3], device=dev)).to(BF),
    "interpolate(x.float(), aa)": lambda: F.interpolate(t(1, 2, 12, 12).float(), size=(5, 5), mode="bilinear", antialias=True).to(BF),
    "log_ndtr(x.float())": lambda: torch.special.log_ndtr(t(8).float()).to(BF),
    "torch.qr(A.float())": lambda: torch.qr(t(6, 6).float())[0].to(BF),
}
for name, f in OPS.items():
    try:
        out = f()
        out.float().sum().backward()
        torch_xla.sync()
        print(f"{name:30s} ok {out.dtype} {out.float().sum().item():.4g}", flush=True)
    except Exception as e:  # noqa: BLE001
        print(f"{name:30s} RAISES {type(e).__name__}: {str(e).strip().splitlines()[0][:140]}", flush=True)
