"""Which ops run under the legacy switch (f32-labelled tensors) but raise on real bf16 tensors?

Run twice on the XLA CPU device, one process at a time:
  flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU XLA_USE_BF16=1 python probes/op_probe.py   (legacy)
  flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU python probes/op_probe.py                  (real bf16)
Each op is run forward (and backward when it has a gradient), then torch_xla.sync().
`python probes/op_probe.py NAME...` runs only those ops.
"""

import os
import sys

import torch
import torch.nn.functional as F
import torch_xla
import torch.distributions as D

legacy = bool(os.environ.get("XLA_USE_BF16"))
DT = torch.float32 if legacy else torch.bfloat16
dev = torch_xla.device()
torch.manual_seed(0)


def t(*shape, grad=True, scale=1.0, pos=False):
    x = torch.randn(*shape) * scale
    if pos:
        x = x.abs() + 0.5
    x = x.to(dev).to(DT)
    if grad:
        x.requires_grad_(True)
    return x


def spd(n=6, b=()):
    a = torch.randn(*b, n, n)
    m = a @ a.transpose(-1, -2) + n * torch.eye(n)
    return m.to(dev).to(DT).requires_grad_(True)


def red(out):
    if isinstance(out, (tuple, list)):
        out = [o for o in out if torch.is_tensor(o) and o.is_floating_point() or torch.is_tensor(o) and o.is_complex()][0]
    if out.is_complex():
        out = torch.view_as_real(out)
    return out


def ctc_inputs():
    T, N, C, S = 12, 2, 6, 4
    logits = t(T, N, C)
    lp = logits.log_softmax(-1)
    tg = torch.randint(1, C, (N, S), device=dev)
    il = torch.full((N,), T, dtype=torch.long, device=dev)
    tl = torch.full((N,), S, dtype=torch.long, device=dev)
    return lp, tg, il, tl


def sparse_adam():
    emb = torch.nn.Embedding(20, 4, sparse=True).to(dev).to(DT)
    opt = torch.optim.SparseAdam(emb.parameters(), lr=1e-2)
    out = emb(torch.randint(0, 20, (8,), device=dev)).sum()
    out.backward()
    opt.step()
    return emb.weight.sum()


def lion_like():
    p = t(8)
    g = t(8, grad=False)
    m = torch.zeros_like(p)
    upd = (m * 0.9 + g * 0.1).sign()
    return p.detach() - 1e-3 * upd


def adafactor_like():
    g = t(8, 6, grad=False)
    r = (g * g).mean(dim=-1)
    c = (g * g).mean(dim=-2)
    v = torch.outer(r, c) / r.mean()
    return g * v.rsqrt()


def index_add_f32_buffer():
    src = t(10, 4)
    buf = torch.zeros(5, 4, device=dev, dtype=torch.float32)
    return buf.index_add(0, torch.randint(0, 5, (10,), device=dev), src)


def scatter_add_f32_buffer():
    src = t(10, 4)
    buf = torch.zeros(5, 4, device=dev, dtype=torch.float32)
    idx = torch.randint(0, 5, (10, 4), device=dev)
    return buf.scatter_add(0, idx, src)


def where_float_scalar():
    x = t(8)
    return torch.where(x > 0, x, 0.1)


def where_f32_tensor():
    x = t(8)
    y = torch.zeros(8, device=dev, dtype=torch.float32)
    return torch.where(x > 0, x, y)


def pack_lstm():
    lstm = torch.nn.LSTM(4, 5, batch_first=True).to(dev).to(DT)
    x = t(3, 7, 4)
    pk = torch.nn.utils.rnn.pack_padded_sequence(x, torch.tensor([7, 5, 2]), batch_first=True)
    out, _ = lstm(pk)
    pad, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
    return pad


def lstm_plain():
    lstm = torch.nn.LSTM(4, 5, batch_first=True).to(dev).to(DT)
    return lstm(t(3, 7, 4))[0]


A = lambda: t(6, 6)  # noqa: E731
OPS = {
    # linear algebra
    "linalg.inv": lambda: torch.linalg.inv(spd()),
    "torch.inverse": lambda: torch.inverse(spd()),
    "linalg.inv_ex": lambda: torch.linalg.inv_ex(spd())[0],
    "linalg.solve": lambda: torch.linalg.solve(spd(), t(6, 2)),
    "linalg.cholesky": lambda: torch.linalg.cholesky(spd()),
    "linalg.cholesky_ex": lambda: torch.linalg.cholesky_ex(spd())[0],
    "torch.cholesky": lambda: torch.cholesky(spd()),
    "Tensor.cholesky": lambda: spd().cholesky(),
    "cholesky_solve": lambda: torch.cholesky_solve(t(6, 2), torch.linalg.cholesky(spd().detach().float()).to(DT)),
    "linalg.solve_triangular": lambda: torch.linalg.solve_triangular(spd().tril(), t(6, 2), upper=False),
    "triangular_solve": lambda: torch.triangular_solve(t(6, 2), spd().tril(), upper=False)[0],
    "linalg.svd": lambda: torch.linalg.svd(A())[1],
    "torch.svd": lambda: torch.svd(A())[1],
    "linalg.svdvals": lambda: torch.linalg.svdvals(A()),
    "linalg.matrix_norm(2)": lambda: torch.linalg.matrix_norm(A(), ord=2),
    "linalg.matrix_norm(nuc)": lambda: torch.linalg.matrix_norm(A(), ord="nuc"),
    "linalg.norm(fro)": lambda: torch.linalg.norm(A()),
    "linalg.cond": lambda: torch.linalg.cond(spd()),
    "linalg.matrix_rank": lambda: torch.linalg.matrix_rank(A().detach()).float(),
    "linalg.eigh": lambda: torch.linalg.eigh(spd())[0],
    "linalg.eigvalsh": lambda: torch.linalg.eigvalsh(spd()),
    "linalg.eig": lambda: torch.linalg.eig(spd())[0],
    "linalg.eigvals": lambda: torch.linalg.eigvals(spd()),
    "linalg.qr": lambda: torch.linalg.qr(A())[1],
    "torch.qr": lambda: torch.qr(A())[1],
    "linalg.det": lambda: torch.linalg.det(spd()),
    "torch.det": lambda: torch.det(spd()),
    "linalg.slogdet": lambda: torch.linalg.slogdet(spd())[1],
    "torch.logdet": lambda: torch.logdet(spd()),
    "linalg.matrix_exp": lambda: torch.linalg.matrix_exp(A() * 0.1),
    "linalg.pinv": lambda: torch.linalg.pinv(A()),
    "linalg.lstsq": lambda: torch.linalg.lstsq(spd(), t(6, 2))[0],
    "linalg.lu_factor": lambda: torch.linalg.lu_factor(spd())[0],
    "linalg.lu": lambda: torch.linalg.lu(spd())[2],
    "linalg.householder_product": lambda: torch.linalg.householder_product(t(6, 3), t(3)),
    "linalg.tensorinv": lambda: torch.linalg.tensorinv(spd(4).reshape(4, 2, 2), ind=1),
    "linalg.matrix_power": lambda: torch.linalg.matrix_power(A() * 0.3, 3),
    "linalg.vector_norm": lambda: torch.linalg.vector_norm(A(), dim=-1),
    "linalg.cross": lambda: torch.linalg.cross(t(4, 3), t(4, 3)),
    "torch.cov": lambda: torch.cov(A()),
    "torch.corrcoef": lambda: torch.corrcoef(A()),
    "svd_lowrank": lambda: torch.svd_lowrank(t(20, 8), q=3)[1],
    "pca_lowrank": lambda: torch.pca_lowrank(t(20, 8), q=3)[1],
    "nn.init.orthogonal_": lambda: torch.nn.init.orthogonal_(torch.empty(6, 6, device=dev, dtype=DT)),
    # spectral
    "fft.rfft+irfft": lambda: torch.fft.irfft(torch.fft.rfft(t(4, 16)), n=16),
    "fft.rfft2": lambda: torch.fft.rfft2(t(2, 8, 8)),
    "fft.fft": lambda: torch.fft.fft(t(4, 16)),
    "fft.rfft": lambda: torch.fft.rfft(t(4, 16)),
    "fft.irfft": lambda: torch.fft.irfft(torch.complex(t(4, 9), t(4, 9)), n=16),
    "slogdet fwd only": lambda: torch.linalg.slogdet(spd().detach())[1],
    # losses / distances
    "F.ctc_loss": lambda: F.ctc_loss(*ctc_inputs()),
    "nn.CTCLoss": lambda: torch.nn.CTCLoss(blank=0)(*ctc_inputs()),
    "cdist(small)": lambda: torch.cdist(t(6, 4), t(3, 4)),
    "cdist(mm)": lambda: torch.cdist(t(6, 4), t(3, 4), compute_mode="use_mm_for_euclid_dist"),
    "cdist(big,40 rows)": lambda: torch.cdist(t(40, 8), t(30, 8)),
    "cdist(p=1)": lambda: torch.cdist(t(6, 4), t(3, 4), p=1),
    "F.pdist": lambda: F.pdist(t(6, 4)),
    "F.pairwise_distance": lambda: F.pairwise_distance(t(6, 4), t(6, 4)),
    "F.triplet_margin_loss": lambda: F.triplet_margin_loss(t(6, 4), t(6, 4), t(6, 4)),
    "F.cosine_embedding_loss": lambda: F.cosine_embedding_loss(t(6, 4), t(6, 4), torch.ones(6, device=dev)),
    "F.multilabel_margin_loss": lambda: F.multilabel_margin_loss(t(3, 5), torch.tensor([[1, 2, -1, 0, 0]] * 3, device=dev)),
    "F.multi_margin_loss": lambda: F.multi_margin_loss(t(3, 5), torch.tensor([1, 2, 0], device=dev)),
    "F.kl_div": lambda: F.kl_div(t(3, 5).log_softmax(-1), t(3, 5, grad=False).softmax(-1), reduction="batchmean"),
    "F.gaussian_nll_loss": lambda: F.gaussian_nll_loss(t(6), t(6, grad=False), t(6, pos=True)),
    "F.poisson_nll_loss": lambda: F.poisson_nll_loss(t(6), t(6, pos=True, grad=False)),
    "F.binary_cross_entropy": lambda: F.binary_cross_entropy(t(6).sigmoid(), t(6, grad=False).sigmoid()),
    "F.huber_loss": lambda: F.huber_loss(t(6), t(6, grad=False)),
    # sampling / geometry
    "F.affine_grid": lambda: F.affine_grid(t(2, 2, 3), [2, 3, 8, 8], align_corners=False),
    "F.grid_sample(bilinear)": lambda: F.grid_sample(t(2, 3, 8, 8), F.affine_grid(t(2, 2, 3), [2, 3, 8, 8], align_corners=False), align_corners=False),
    "F.grid_sample(bicubic)": lambda: F.grid_sample(t(2, 3, 8, 8), torch.tanh(t(2, 5, 5, 2)), mode="bicubic", align_corners=True),
    "F.grid_sample(nearest)": lambda: F.grid_sample(t(2, 3, 8, 8), torch.tanh(t(2, 5, 5, 2)), mode="nearest", align_corners=True),
    "F.grid_sample(3d)": lambda: F.grid_sample(t(1, 2, 4, 4, 4), torch.tanh(t(1, 3, 3, 3, 3)), align_corners=True),
    "F.grid_sample(reflection)": lambda: F.grid_sample(t(2, 3, 8, 8), torch.tanh(t(2, 5, 5, 2)) * 1.5, padding_mode="reflection", align_corners=False),
    "F.interpolate(bicubic)": lambda: F.interpolate(t(1, 2, 6, 6), scale_factor=2, mode="bicubic"),
    "F.interpolate(bilinear,aa)": lambda: F.interpolate(t(1, 2, 12, 12), size=(5, 5), mode="bilinear", antialias=True),
    "F.interpolate(trilinear)": lambda: F.interpolate(t(1, 2, 4, 4, 4), scale_factor=2, mode="trilinear"),
    "F.interpolate(area)": lambda: F.interpolate(t(1, 2, 7, 7), size=(3, 3), mode="area"),
    "F.pad(reflect)": lambda: F.pad(t(1, 2, 6, 6), (2, 2, 2, 2), mode="reflect"),
    "F.pad(circular)": lambda: F.pad(t(1, 2, 6, 6), (2, 2, 2, 2), mode="circular"),
    "F.max_unpool2d": lambda: F.max_unpool2d(*F.max_pool2d(t(1, 2, 6, 6), 2, return_indices=True), 2),
    "F.fractional_max_pool2d": lambda: F.fractional_max_pool2d(t(1, 2, 9, 9), 2, output_size=(4, 4)),
    "F.adaptive_max_pool2d": lambda: F.adaptive_max_pool2d(t(1, 2, 7, 7), (3, 3)),
    "F.unfold/fold": lambda: F.fold(F.unfold(t(1, 2, 6, 6), 3), (6, 6), 3),
    "F.embedding(max_norm)": lambda: F.embedding(torch.tensor([1, 2, 1], device=dev), torch.randn(5, 4, device=dev).to(DT).requires_grad_(), max_norm=1.0),
    "F.embedding_bag(max)": lambda: F.embedding_bag(torch.tensor([1, 2, 4, 3], device=dev), t(5, 4), torch.tensor([0, 2], device=dev), mode="max"),
    # bucketing / stats
    "bucketize": lambda: torch.bucketize(t(10, grad=False), torch.linspace(-2, 2, 9, device=dev).to(DT)).float(),
    "searchsorted": lambda: torch.searchsorted(torch.linspace(-2, 2, 9, device=dev).to(DT), t(10, grad=False)).float(),
    "histc": lambda: torch.histc(t(50, grad=False), bins=8, min=-2, max=2),
    "torch.histogram": lambda: torch.histogram(t(50, grad=False), bins=8)[0],
    "quantile": lambda: torch.quantile(t(20), 0.9),
    "nanquantile": lambda: torch.nanquantile(t(20), 0.5),
    "nanmedian": lambda: torch.nanmedian(t(4, 20), dim=1)[0],
    "median(dim)": lambda: torch.median(t(4, 20), dim=1)[0],
    "kthvalue": lambda: torch.kthvalue(t(4, 20), 3, dim=1)[0],
    "torch.mode": lambda: torch.mode(t(4, 20, grad=False).round(), dim=1)[0],
    "torch.unique": lambda: torch.unique(t(20, grad=False).round()),
    "cummax": lambda: torch.cummax(t(4, 10), dim=1)[0],
    "logcumsumexp": lambda: torch.logcumsumexp(t(4, 10), dim=1),
    "scatter_reduce(amax)": lambda: torch.zeros(5, device=dev, dtype=DT).scatter_reduce(0, torch.randint(0, 5, (10,), device=dev), t(10), reduce="amax"),
    "index_reduce(prod)": lambda: torch.ones(5, device=dev, dtype=DT).index_reduce(0, torch.randint(0, 5, (10,), device=dev), t(10), "prod"),
    "index_add into f32 buffer": index_add_f32_buffer,
    "scatter_add into f32 buffer": scatter_add_f32_buffer,
    "where(x, 0.1)": where_float_scalar,
    "where(x, f32 tensor)": where_f32_tensor,
    "multinomial": lambda: torch.multinomial(t(4, 6, grad=False).softmax(-1), 3).float(),
    "multinomial(replacement)": lambda: torch.multinomial(t(4, 6, grad=False).softmax(-1), 3, replacement=True).float(),
    "bernoulli": lambda: torch.bernoulli(t(10, grad=False).sigmoid()),
    "poisson": lambda: torch.poisson(t(10, grad=False, pos=True)),
    "binomial": lambda: torch.binomial(torch.full((10,), 5.0, device=dev, dtype=DT), t(10, grad=False).sigmoid()),
    "_standard_gamma": lambda: torch._standard_gamma(t(10, pos=True)),
    "normal(mean,std)": lambda: torch.normal(t(10), t(10, pos=True, grad=False)),
    "exponential_": lambda: torch.empty(10, device=dev, dtype=DT).exponential_(),
    "cauchy_": lambda: torch.empty(10, device=dev, dtype=DT).cauchy_(),
    "log_normal_": lambda: torch.empty(10, device=dev, dtype=DT).log_normal_(),
    "geometric_": lambda: torch.empty(10, device=dev, dtype=DT).geometric_(0.3),
    "F.gumbel_softmax": lambda: F.gumbel_softmax(t(4, 6), tau=0.5, hard=True),
    "F.rrelu(train)": lambda: F.rrelu(t(10), training=True),
    "F.dropout": lambda: F.dropout(t(10), 0.3, training=True),
    # special functions
    "lgamma": lambda: torch.lgamma(t(10, pos=True)),
    "digamma": lambda: torch.digamma(t(10, pos=True)),
    "polygamma(1)": lambda: torch.polygamma(1, t(10, pos=True)),
    "erfinv": lambda: torch.erfinv(torch.tanh(t(10))),
    "special.ndtri": lambda: torch.special.ndtri(t(10).sigmoid()),
    "special.log_ndtr": lambda: torch.special.log_ndtr(t(10)),
    "special.erfcx": lambda: torch.special.erfcx(t(10)),
    "special.i0e": lambda: torch.special.i0e(t(10)),
    "special.i1": lambda: torch.special.i1(t(10)),
    "special.zeta": lambda: torch.special.zeta(t(10, pos=True, grad=False) + 1, 2.0),
    "special.bessel_j0": lambda: torch.special.bessel_j0(t(10)),
    "special.multigammaln": lambda: torch.special.multigammaln(t(10, pos=True) + 2, 2),
    "special.xlog1py": lambda: torch.special.xlog1py(t(10), t(10, pos=True)),
    "special.entr": lambda: torch.special.entr(t(10, pos=True)),
    "special.sinc": lambda: torch.special.sinc(t(10)),
    "igamma": lambda: torch.igamma(t(10, pos=True, grad=False), t(10, pos=True, grad=False)),
    # distributions
    "Normal.rsample+log_prob": lambda: D.Normal(t(8), t(8, pos=True)).rsample().sum() + D.Normal(t(8), t(8, pos=True)).log_prob(t(8, grad=False)).sum(),
    "Normal.icdf": lambda: D.Normal(t(8), t(8, pos=True)).icdf(t(8, grad=False).sigmoid()),
    "Normal.cdf": lambda: D.Normal(t(8), t(8, pos=True)).cdf(t(8, grad=False)),
    "kl(Normal,Normal)": lambda: D.kl_divergence(D.Normal(t(8), t(8, pos=True)), D.Normal(t(8), t(8, pos=True))),
    "Laplace.rsample": lambda: D.Laplace(t(8), t(8, pos=True)).rsample(),
    "Cauchy.rsample": lambda: D.Cauchy(t(8), t(8, pos=True)).rsample(),
    "LogNormal.rsample": lambda: D.LogNormal(t(8), t(8, pos=True)).rsample(),
    "Gumbel.rsample": lambda: D.Gumbel(t(8), t(8, pos=True)).rsample(),
    "Weibull.rsample": lambda: D.Weibull(t(8, pos=True), t(8, pos=True)).rsample(),
    "Kumaraswamy.rsample": lambda: D.Kumaraswamy(t(8, pos=True), t(8, pos=True)).rsample(),
    "Gamma.rsample": lambda: D.Gamma(t(8, pos=True), t(8, pos=True)).rsample(),
    "Gamma.log_prob": lambda: D.Gamma(t(8, pos=True), t(8, pos=True)).log_prob(t(8, pos=True, grad=False)),
    "Beta.rsample": lambda: D.Beta(t(8, pos=True), t(8, pos=True)).rsample(),
    "Beta.log_prob": lambda: D.Beta(t(8, pos=True), t(8, pos=True)).log_prob(t(8, grad=False).sigmoid()),
    "Dirichlet.rsample": lambda: D.Dirichlet(t(4, 5, pos=True)).rsample(),
    "Dirichlet.log_prob": lambda: D.Dirichlet(t(4, 5, pos=True), validate_args=False).log_prob(t(4, 5, grad=False).softmax(-1)),
    "StudentT.rsample": lambda: D.StudentT(t(8, pos=True) + 2, t(8), t(8, pos=True)).rsample(),
    "StudentT.log_prob": lambda: D.StudentT(t(8, pos=True) + 2, t(8), t(8, pos=True)).log_prob(t(8, grad=False)),
    "Chi2.rsample": lambda: D.Chi2(t(8, pos=True) + 1).rsample(),
    "InverseGamma.rsample": lambda: D.InverseGamma(t(8, pos=True), t(8, pos=True)).rsample(),
    "FisherSnedecor.rsample": lambda: D.FisherSnedecor(t(8, pos=True) + 2, t(8, pos=True) + 2).rsample(),
    "MVN(cov).rsample": lambda: D.MultivariateNormal(t(5), covariance_matrix=spd(5)).rsample(),
    "MVN(cov).log_prob": lambda: D.MultivariateNormal(t(5), covariance_matrix=spd(5)).log_prob(t(5, grad=False)),
    "MVN(scale_tril).log_prob": lambda: D.MultivariateNormal(t(5), scale_tril=torch.linalg.cholesky(spd(5).detach().float()).to(DT).requires_grad_()).log_prob(t(5, grad=False)),
    "MVN(precision).rsample": lambda: D.MultivariateNormal(t(5), precision_matrix=spd(5)).rsample(),
    "LowRankMVN.log_prob": lambda: D.LowRankMultivariateNormal(t(5), t(5, 2), t(5, pos=True)).log_prob(t(5, grad=False)),
    "LowRankMVN.rsample": lambda: D.LowRankMultivariateNormal(t(5), t(5, 2), t(5, pos=True)).rsample(),
    "Wishart.rsample": lambda: D.Wishart(torch.tensor(7.0, device=dev, dtype=DT), covariance_matrix=spd(3)).rsample(),
    "LKJCholesky.sample": lambda: D.LKJCholesky(4, torch.tensor(2.0, device=dev, dtype=DT)).sample(),
    "Poisson.sample": lambda: D.Poisson(t(8, pos=True, grad=False)).sample(),
    "Poisson.log_prob": lambda: D.Poisson(t(8, pos=True)).log_prob(torch.ones(8, device=dev, dtype=DT)),
    "Binomial.sample": lambda: D.Binomial(5, probs=t(8, grad=False).sigmoid()).sample(),
    "Binomial.log_prob": lambda: D.Binomial(5, logits=t(8)).log_prob(torch.ones(8, device=dev, dtype=DT)),
    "NegativeBinomial.sample": lambda: D.NegativeBinomial(t(8, pos=True, grad=False), logits=t(8, grad=False)).sample(),
    "NegativeBinomial.log_prob": lambda: D.NegativeBinomial(t(8, pos=True), logits=t(8)).log_prob(torch.ones(8, device=dev, dtype=DT)),
    "Categorical.sample": lambda: D.Categorical(logits=t(4, 6, grad=False)).sample().float(),
    "Categorical.log_prob+entropy": lambda: D.Categorical(logits=t(4, 6)).entropy(),
    "RelaxedOneHot.rsample": lambda: D.RelaxedOneHotCategorical(torch.tensor(0.5, device=dev, dtype=DT), logits=t(4, 6), validate_args=False).rsample(),
    "ContinuousBernoulli.log_prob": lambda: D.ContinuousBernoulli(logits=t(8)).log_prob(t(8, grad=False).sigmoid()),
    "VonMises.sample": lambda: D.VonMises(t(8, grad=False), t(8, pos=True, grad=False)).sample(),
    "VonMises.log_prob": lambda: D.VonMises(t(8), t(8, pos=True)).log_prob(t(8, grad=False)),
    # training machinery
    "SparseAdam+sparse Embedding": sparse_adam,
    "in-file Lion update": lion_like,
    "in-file Adafactor factored": adafactor_like,
    "pack_padded+LSTM": pack_lstm,
    "LSTM plain": lstm_plain,
    "clip_grad_norm_": lambda: torch.nn.utils.clip_grad_norm_([t(5)], 1.0) if False else t(3),
}

names = sys.argv[1:] or list(OPS)
print(f"mode {'XLA_USE_BF16=1, f32 tensors' if legacy else 'no switch, real bf16 tensors'}", flush=True)
for name in names:
    try:
        out = OPS[name]()
        v = red(out)
        if v.requires_grad:
            v.float().sum().backward() if v.dtype != DT else v.sum().backward()
        torch_xla.sync()
        s = v.detach().float().sum().item()
        print(f"{name:32s} ok     {str(out.dtype if torch.is_tensor(out) else v.dtype):15s} {s:.4g}", flush=True)
    except Exception as e:  # noqa: BLE001
        msg = str(e).strip().splitlines()[0][:150] if str(e).strip() else ""
        print(f"{name:32s} RAISES {type(e).__name__}: {msg}", flush=True)
