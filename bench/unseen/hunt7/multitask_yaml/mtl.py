"""Multi-task regression/classification/detection with learned task uncertainty
(Kendall et al.): loss = sum_i exp(-s_i) * L_i + s_i, s_i = log sigma_i^2 learned.
"""
import argparse
import logging
import os

import yaml

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

log = logging.getLogger("mtl")
N_KINDS = 5


def load_config(path):
    with open(path) as f:
        cfg = yaml.safe_load(f)
    for key, value in (cfg.get("env") or {}).items():
        os.environ[str(key)] = str(value)
    return cfg


class Trunk(nn.Module):
    def __init__(self, d_in, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU())

    def forward(self, x):
        return self.net(x)


class MultiTask(nn.Module):
    def __init__(self, d_in, hidden, tasks):
        super().__init__()
        self.trunk = Trunk(d_in, hidden)
        out_dims = {"regression": 1, "classification": N_KINDS, "binary": 1}
        self.heads = nn.ModuleDict({name: nn.Linear(hidden, out_dims[kind]) for name, kind in tasks.items()})
        self.log_vars = nn.Parameter(torch.zeros(len(tasks)))
        self.tasks = tasks

    def forward(self, x):
        h = self.trunk(x)
        return {name: head(h).squeeze(-1) if head.out_features == 1 else head(h) for name, head in self.heads.items()}


def task_loss(kind, pred, target):
    if kind == "regression":
        return F.mse_loss(pred, target)
    if kind == "classification":
        return F.cross_entropy(pred, target)
    return F.binary_cross_entropy_with_logits(pred, target)


class Synthetic(torch.utils.data.IterableDataset):
    def __init__(self, d_in, batch, seed=0):
        self.d_in, self.batch, self.seed = d_in, batch, seed

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed)
        w = torch.randn(self.d_in, 3, generator=g) / self.d_in ** 0.5
        while True:
            x = torch.randn(self.batch, self.d_in, generator=g)
            z = x @ w
            yield x, {
                "depth": z[:, 0] + 0.1 * torch.randn(self.batch, generator=g),
                "kind": torch.bucketize(z[:, 1], torch.tensor([-1.0, -0.3, 0.3, 1.0])),
                "defect": (z[:, 2] > 0.5).float(),
            }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default=os.path.join(os.path.dirname(__file__), "configs", "train.yaml"))
    args = ap.parse_args()
    cfg = load_config(args.config)
    logging.basicConfig(level=logging.INFO, format="%(message)s", force=True)
    torch.manual_seed(0)
    dev = torch_xla.device()
    mcfg, rcfg = cfg["model"], cfg["run"]
    model = MultiTask(mcfg["d_in"], mcfg["hidden"], mcfg["tasks"]).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=rcfg["lr"])
    stream = iter(torch.utils.data.DataLoader(Synthetic(mcfg["d_in"], rcfg["batch"]), batch_size=None))
    names = list(mcfg["tasks"])
    for step in range(1, rcfg["steps"] + 1):
        x, targets = next(stream)
        x = x.to(dev)
        targets = {k: v.to(dev) for k, v in targets.items()}
        preds = model(x)
        losses = {n: task_loss(mcfg["tasks"][n], preds[n], targets[n]) for n in names}
        weights = torch.exp(-model.log_vars)
        total = sum(weights[i] * losses[n] + model.log_vars[i] for i, n in enumerate(names))
        opt.zero_grad()
        total.backward()
        opt.step()
        xm.mark_step()
        sigmas = torch.exp(0.5 * model.log_vars).detach().cpu().numpy()
        log.info("step %d total %.4f %s sigma %s", step, total.item(),
                 " ".join(f"{n}={l.item():.3f}" for n, l in losses.items()), sigmas.round(3))


if __name__ == "__main__":
    main()
