"""Fine-tune a classification head on top of a frozen, pretrained feature extractor."""
import os

os.environ.setdefault("XLA_USE_BF16", "1")

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

C, EPS, ACCUM = 5, 0.1, 4


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        return self.pool(self.conv(x)).flatten(1)


def smooth_targets(y, device):
    return torch.eye(C, device=device)[y] * (1 - EPS) + EPS / C


def main():
    device = xm.xla_device()
    torch.manual_seed(0)
    backbone = Backbone().to(device)
    backbone.eval().requires_grad_(False)
    head = nn.Linear(32, C).to(device)
    opt = torch.optim.SGD(head.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 5))

    imgs = torch.rand(64, 3, 16, 16)
    labels = torch.randint(0, C, (64,))
    log = []
    for step in range(12):
        idx = torch.randint(0, 64, (8,))
        x, y = imgs[idx].to(device), labels[idx].to(device)
        with torch.no_grad():
            feats = backbone(x)
        logits = head(feats)
        loss = -(smooth_targets(y, device) * F.log_softmax(logits, -1)).sum(-1).mean()
        (loss / ACCUM).backward()
        if (step + 1) % ACCUM == 0:
            gnorm = nn.utils.clip_grad_norm_(head.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
            sched.step()
            xm.mark_step()
            log.append((step, loss.item(), gnorm.item()))
    print("DTYPES", feats.dtype, logits.dtype, smooth_targets(y, device).dtype, loss.dtype)
    for row in log:
        print("step %d loss %.4f gnorm %.4f" % row)
    np.save("head_w.npy", head.weight.detach().cpu().numpy())


if __name__ == "__main__":
    main()
