# exported from retrieval_eval.ipynb (code cells; magics commented)

# %set_env PJRT_DEVICE=TPU
# %set_env XLA_USE_BF16=1


import json
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

device = torch_xla.device()
K, TAU = 5, 0.1


class Embedder(nn.Module):
    def __init__(self, d_in=24, d=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, d))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


ckpt = Path('embedder.pt')
if not ckpt.exists():  # the artefact of the training notebook; a stand-in here
    torch.manual_seed(0)
    torch.save(Embedder().state_dict(), ckpt)
model = Embedder()
model.load_state_dict(torch.load(ckpt, map_location='cpu'))
model = model.to(device).eval()


g = torch.Generator().manual_seed(1)
centers = torch.randn(6, 24, generator=g) * 1.2
gy = torch.arange(300) % 6
qy = torch.randint(0, 6, (120,), generator=g)
gx = centers[gy] + torch.randn(300, 24, generator=g)
qx = centers[qy] + torch.randn(120, 24, generator=g)
gy_d, qy_d = gy.to(device), qy.to(device)


with torch.no_grad():
    ge = model(gx.to(device))
    qe = model(qx.to(device))
    d = torch.cdist(qe, ge)
    vals, idx = d.topk(K, largest=False)
    w = torch.softmax(-vals / TAU, dim=1)
    votes = torch.zeros(qe.shape[0], 6, device=device).scatter_add_(1, gy_d[idx], w)
    pred = votes.argmax(1)
    acc = (pred == qy_d).float().mean()
    hit = (gy_d[idx] == qy_d[:, None]).any(1)
    recall = hit.sum() / hit.numel()
    score = torch.logsumexp(-d / TAU, dim=1)
    sorted_s, _ = score.sort()
    thresholds = torch.linspace(0.0, 1.0, 11, device=device) * (sorted_s[-1] - sorted_s[0]) + sorted_s[0]
    frac_below = torch.searchsorted(sorted_s, thresholds) / score.numel()
print(f'kNN acc {acc:.3f}  recall@{K} {recall:.3f}')


q64 = qe.cpu().numpy().astype(np.float64)
g64 = ge.cpu().numpy().astype(np.float64)
d_ref = np.sqrt(((q64[:, None, :] - g64[None, :, :]) ** 2).sum(-1))
d_err = np.abs(np.asarray(d.cpu()) - d_ref).max()
print(f'max |cdist - float64 reference| = {d_err:.2e}')
assert d_err < 0.05, d_err


class RetrievalResult(NamedTuple):
    acc: float
    recall: float
    thresholds: list
    frac_below: list
    margins: list


res = RetrievalResult(
    acc=acc.item(),
    recall=float(recall),
    thresholds=thresholds.cpu().tolist(),
    frac_below=frac_below.tolist(),
    margins=(vals[:, 1] - vals[:, 0]).cpu().tolist()[:20],
)
Path('out').mkdir(exist_ok=True)
Path('out/retrieval.json').write_text(json.dumps(res._asdict(), indent=1))
np.save('out/query_embeddings.npy', q64.astype(np.float32))
res.acc, res.recall
