"""Writes retrieval_eval.ipynb (the case) and export/retrieval_eval.py (its code cells, magics commented, for verify)."""
import json
from pathlib import Path

cells = [
    ("markdown", "# Retrieval evaluation of the frozen embedder\nkNN accuracy, recall@k, open-set score thresholds; a float64 check of the distances."),
    ("code", "%set_env PJRT_DEVICE=TPU\n%set_env XLA_USE_BF16=1"),
    ("code", "import json\nfrom pathlib import Path\nfrom typing import NamedTuple\n\nimport numpy as np\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport torch_xla\n\ndevice = torch_xla.device()\nK, TAU = 5, 0.1"),
    ("code", "class Embedder(nn.Module):\n    def __init__(self, d_in=24, d=16):\n        super().__init__()\n        self.net = nn.Sequential(nn.Linear(d_in, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, d))\n\n    def forward(self, x):\n        return F.normalize(self.net(x), dim=-1)\n\n\nckpt = Path('embedder.pt')\nif not ckpt.exists():  # the artefact of the training notebook; a stand-in here\n    torch.manual_seed(0)\n    torch.save(Embedder().state_dict(), ckpt)\nmodel = Embedder()\nmodel.load_state_dict(torch.load(ckpt, map_location='cpu'))\nmodel = model.to(device).eval()"),
    ("code", "g = torch.Generator().manual_seed(1)\ncenters = torch.randn(6, 24, generator=g) * 1.2\ngy = torch.arange(300) % 6\nqy = torch.randint(0, 6, (120,), generator=g)\ngx = centers[gy] + torch.randn(300, 24, generator=g)\nqx = centers[qy] + torch.randn(120, 24, generator=g)\ngy_d, qy_d = gy.to(device), qy.to(device)"),
    ("code", "with torch.no_grad():\n    ge = model(gx.to(device))\n    qe = model(qx.to(device))\n    d = torch.cdist(qe, ge)\n    vals, idx = d.topk(K, largest=False)\n    w = torch.softmax(-vals / TAU, dim=1)\n    votes = torch.zeros(qe.shape[0], 6, device=device).scatter_add_(1, gy_d[idx], w)\n    pred = votes.argmax(1)\n    acc = (pred == qy_d).float().mean()\n    hit = (gy_d[idx] == qy_d[:, None]).any(1)\n    recall = hit.sum() / hit.numel()\n    score = torch.logsumexp(-d / TAU, dim=1)\n    sorted_s, _ = score.sort()\n    thresholds = torch.linspace(0.0, 1.0, 11, device=device) * (sorted_s[-1] - sorted_s[0]) + sorted_s[0]\n    frac_below = torch.searchsorted(sorted_s, thresholds) / score.numel()\nprint(f'kNN acc {acc:.3f}  recall@{K} {recall:.3f}')"),
    ("code", "q64 = qe.cpu().numpy().astype(np.float64)\ng64 = ge.cpu().numpy().astype(np.float64)\nd_ref = np.sqrt(((q64[:, None, :] - g64[None, :, :]) ** 2).sum(-1))\nd_err = np.abs(np.asarray(d.cpu()) - d_ref).max()\nprint(f'max |cdist - float64 reference| = {d_err:.2e}')\nassert d_err < 0.05, d_err"),
    ("code", "class RetrievalResult(NamedTuple):\n    acc: float\n    recall: float\n    thresholds: list\n    frac_below: list\n    margins: list\n\n\nres = RetrievalResult(\n    acc=acc.item(),\n    recall=float(recall),\n    thresholds=thresholds.cpu().tolist(),\n    frac_below=frac_below.tolist(),\n    margins=(vals[:, 1] - vals[:, 0]).cpu().tolist()[:20],\n)\nPath('out').mkdir(exist_ok=True)\nPath('out/retrieval.json').write_text(json.dumps(res._asdict(), indent=1))\nnp.save('out/query_embeddings.npy', q64.astype(np.float32))\nres.acc, res.recall"),
]
nb = {"cells": [], "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}, "language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
for i, (kind, src) in enumerate(cells):
    c = {"cell_type": kind, "id": f"c{i}", "metadata": {}, "source": src.splitlines(keepends=True)}
    if kind == "code":
        c.update(execution_count=None, outputs=[])
    nb["cells"].append(c)
Path("retrieval_eval.ipynb").write_text(json.dumps(nb, indent=1) + "\n")
py = []
for kind, src in cells:
    if kind == "code":
        py.append("\n".join(("# " + l if l.startswith("%") else l) for l in src.splitlines()))
Path("export").mkdir(exist_ok=True)
Path("export/retrieval_eval.py").write_text("# exported from retrieval_eval.ipynb (code cells; magics commented)\n\n" + "\n\n\n".join(py) + "\n")
