"""A two-tower contrastive model (image features x caption features) with a learned temperature."""
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

os.environ["XLA_USE_BF16"] = "1"


class Tower(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.proj = nn.Sequential(nn.Linear(dim_in, 64), nn.GELU(), nn.Linear(64, dim_out))

    def forward(self, x):
        return F.normalize(self.proj(x), dim=-1)


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.image = Tower(48, 16)
        self.text = Tower(24, 16)
        self.logit_scale = nn.Parameter(torch.ones([]) * math.log(1 / 0.07))

    def forward(self, img, txt):
        return self.image(img), self.text(txt), self.logit_scale.exp()


def clip_loss(img_emb, txt_emb, scale):
    logits = scale * img_emb @ txt_emb.t()
    labels = torch.arange(logits.size(0), device=logits.device)
    return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2


def make_pairs(n, gen):
    latent = torch.randn(n, 8, generator=gen)
    img = torch.cat([latent, torch.randn(n, 40, generator=gen)], dim=1)
    txt = torch.cat([latent, torch.randn(n, 16, generator=gen)], dim=1)
    return img, txt


@torch.no_grad()
def recall_at_1(model, img, txt):
    i, t, _ = model(img, txt)
    sim = (i @ t.t()).cpu().numpy()
    return float(np.mean(sim.argmax(axis=1) == np.arange(sim.shape[0])))


def main():
    torch.manual_seed(0)
    device = xm.xla_device()
    gen = torch.Generator().manual_seed(0)
    model = TwoTower().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    val_img, val_txt = (t.to(device) for t in make_pairs(32, gen))
    for step in range(12):
        img, txt = make_pairs(32, gen)
        img, txt = img.to(device), txt.to(device)
        loss = clip_loss(*model(img, txt))
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            model.logit_scale.clamp_(0, math.log(100))
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    print(f"recall@1 {recall_at_1(model, val_img, val_txt):.3f}")


if __name__ == "__main__":
    main()
