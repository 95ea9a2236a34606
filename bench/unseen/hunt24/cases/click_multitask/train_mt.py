"""Multi-task tabular model (classification + regression heads) with a click CLI."""
import os

os.environ.setdefault("XLA_USE_BF16", "1")

import click
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_xla
import torch_xla.core.xla_model as xm

TASK_WEIGHTS = {"cls": 1.0, "reg": 0.5, "aux": 0.1}


class MultiTaskNet(nn.Module):
    def __init__(self, in_dim, hidden, n_classes):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.GELU(), nn.LayerNorm(hidden),
            nn.Linear(hidden, hidden), nn.GELU(),
        )
        self.heads = nn.ModuleDict({
            "cls": nn.Linear(hidden, n_classes),
            "reg": nn.Linear(hidden, 2),
            "aux": nn.Linear(hidden, 1),
        })

    def forward(self, x):
        h = self.trunk(x)
        return {name: head(h) for name, head in self.heads.items()}


def synth_batch(batch_size, in_dim, n_classes, gen):
    x = torch.randn(batch_size, in_dim, generator=gen)
    y_cls = (x[:, :n_classes].argmax(dim=1))
    y_reg = torch.stack([x[:, 0] * 2 - x[:, 1], x[:, 2].tanh()], dim=1)
    y_aux = (x.norm(dim=1, keepdim=True) > in_dim ** 0.5).float()
    return x, {"cls": y_cls, "reg": y_reg, "aux": y_aux}


def compute_losses(out, tgt):
    return {
        "cls": F.cross_entropy(out["cls"], tgt["cls"], label_smoothing=0.05),
        "reg": F.smooth_l1_loss(out["reg"], tgt["reg"]),
        "aux": F.binary_cross_entropy_with_logits(out["aux"], tgt["aux"]),
    }


@click.command()
@click.option("--steps", default=120, show_default=True)
@click.option("--batch-size", default=128, show_default=True)
@click.option("--in-dim", default=32)
@click.option("--hidden", default=256)
@click.option("--n-classes", default=5)
@click.option("--lr", default=1e-3, type=float)
@click.option("--eval-every", default=40)
@click.option("--save", "save_path", default="mt.pt", type=click.Path())
def main(steps, batch_size, in_dim, hidden, n_classes, lr, eval_every, save_path):
    device = torch_xla.device()
    gen = torch.Generator().manual_seed(0)
    model = MultiTaskNet(in_dim, hidden, n_classes).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)

    for step in range(1, steps + 1):
        x, tgt = synth_batch(batch_size, in_dim, n_classes, gen)
        x = x.to(device)
        tgt = {k: v.to(device) for k, v in tgt.items()}
        out = model(x)
        losses = compute_losses(out, tgt)
        loss = sum(TASK_WEIGHTS[k] * l for k, l in losses.items())
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        torch_xla.sync()

        if step % eval_every == 0:
            model.eval()
            totals = {"acc": 0.0, "mae": 0.0, "aux_acc": 0.0}
            n = 0
            with torch.no_grad():
                for _ in range(4):
                    x, tgt = synth_batch(256, in_dim, n_classes, gen)
                    out = model(x.to(device))
                    out = {k: v.cpu() for k, v in out.items()}
                    totals["acc"] += (out["cls"].argmax(1) == tgt["cls"]).sum().item()
                    totals["mae"] += (out["reg"] - tgt["reg"]).abs().mean(1).sum().item()
                    totals["aux_acc"] += ((out["aux"] > 0).float() == tgt["aux"]).sum().item()
                    n += x.shape[0]
            model.train()
            parts = " ".join(f"{k}={v.item():.3f}" for k, v in losses.items())
            click.echo(f"step {step} loss {loss.item():.4f} [{parts}] "
                       + " ".join(f"{k}={v / n:.3f}" for k, v in totals.items()))

    torch.save({"model": {k: v.cpu() for k, v in model.state_dict().items()},
                "task_weights": TASK_WEIGHTS}, save_path)


if __name__ == "__main__":
    main()
