"""Imbalanced tabular classifier: focal loss with class weights from label counts, hand-made label smoothing."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

N_CLS = 3


class FocalLoss(nn.Module):
    def __init__(self, gamma=2.0, smoothing=0.05):
        super().__init__()
        self.gamma = gamma
        self.smoothing = smoothing

    def forward(self, logits, target, class_w):
        n_cls = logits.size(-1)
        soft = torch.full_like(logits, self.smoothing / (n_cls - 1))
        soft.scatter_(1, target[:, None], 1.0 - self.smoothing)
        logp = F.log_softmax(logits, dim=-1)
        p_t = logp.gather(1, target[:, None]).squeeze(1).exp()
        ce = -(soft * logp).sum(-1)
        focal = (1 - p_t) ** self.gamma * ce
        return (focal * class_w[target]).sum() / class_w[target].sum()


def make_data(n, gen):
    y = torch.multinomial(torch.tensor([0.85, 0.12, 0.03]), n, replacement=True, generator=gen)
    x = torch.randn(n, 12, generator=gen) + y[:, None] * 0.8
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(0)
    device = torch_xla.device()
    x_all, y_all = make_data(2048, gen)
    model = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, N_CLS)).to(device)
    crit = FocalLoss()
    opt = torch.optim.RMSprop(model.parameters(), lr=1e-3, momentum=0.9)

    y_dev = y_all.to(device)
    counts = torch.bincount(y_dev, minlength=N_CLS).float()
    class_w = counts.sum() / (N_CLS * counts.clamp(min=1))
    prior = torch.log(counts / counts.sum())
    with torch.no_grad():
        model[-1].bias.copy_(prior)

    for step in range(args.steps):
        idx = torch.randint(0, 2048, (128,), generator=gen)
        xb, yb = x_all[idx].to(device), y_all[idx].to(device)
        loss = crit(model(xb), yb, class_w)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        torch_xla.sync()
        if step % 4 == 0:
            print(f"step {step} focal {loss.item():.4f}")

    model.eval()
    with torch.no_grad():
        pred = model(x_all.to(device)).argmax(-1)
        per_cls = torch.stack([(pred[y_dev == c] == c).float().mean() for c in range(N_CLS)])
        bal_acc = per_cls.mean()
        wce = F.cross_entropy(model(x_all.to(device)), y_dev, weight=class_w)
    print("balanced acc", round(bal_acc.item(), 3), "weighted ce", round(wce.item(), 4))
    print("per-class recall", per_cls.cpu().tolist())


if __name__ == "__main__":
    main()
