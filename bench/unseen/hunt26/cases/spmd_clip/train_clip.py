"""Small image/text contrastive pretraining with SPMD data parallelism (one mesh axis)."""
import argparse
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr
import torch_xla.distributed.spmd as xs

VOCAB, SEQ, WIDTH, EMBED = 512, 16, 128, 64


class ImageTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 4, stride=4)
        self.body = nn.Sequential(
            nn.Conv2d(32, 64, 3, padding=1), nn.GELU(), nn.Conv2d(64, WIDTH, 3, stride=2, padding=1), nn.GELU()
        )
        self.proj = nn.Linear(WIDTH, EMBED, bias=False)

    def forward(self, img):
        h = self.body(self.stem(img))
        return self.proj(h.mean(dim=(2, 3)))


class TextTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, WIDTH)
        layer = nn.TransformerEncoderLayer(WIDTH, 4, 4 * WIDTH, dropout=0.0, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.ln = nn.LayerNorm(WIDTH)
        self.proj = nn.Linear(WIDTH, EMBED, bias=False)

    def forward(self, ids, pos):
        h = self.tok(ids) + pos[: ids.shape[1]]
        h = self.ln(self.enc(h, src_key_padding_mask=ids.eq(0)))
        last = ids.ne(0).sum(1).clamp(min=1) - 1
        return self.proj(h[torch.arange(ids.shape[0], device=ids.device), last])


def synthetic_batch(rng, batch):
    # uint8 pixels as a decoder would give them, token ids with right padding
    img = torch.from_numpy(rng.integers(0, 256, size=(batch, 3, 32, 32), dtype=np.uint8))
    lens = rng.integers(4, SEQ + 1, size=batch)
    ids = np.zeros((batch, SEQ), dtype=np.int64)
    for i, n in enumerate(lens):
        ids[i, :n] = rng.integers(1, VOCAB, size=n)
        ids[i, 0] = 1 + int(img[i, 0, 0, 0]) % (VOCAB - 1)  # a weak image/text tie so the loss can fall
    return img, torch.from_numpy(ids)


def clip_loss(img_emb, txt_emb, logit_scale):
    img_emb = F.normalize(img_emb, dim=-1)
    txt_emb = F.normalize(txt_emb, dim=-1)
    logits = logit_scale.exp().clamp(max=100.0) * img_emb @ txt_emb.t()
    labels = torch.arange(logits.shape[0], device=logits.device)
    return 0.5 * (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)), logits


def recall_at(logits, k):
    top = logits.topk(k, dim=1).indices
    hit = (top == torch.arange(logits.shape[0], device=logits.device)[:, None]).any(1)
    return hit.float().mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--out", default="out/clip")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    xr.use_spmd()
    n_dev = xr.global_runtime_device_count()
    mesh = xs.Mesh(np.arange(n_dev), (n_dev, 1), ("data", "model"))
    device = torch_xla.device()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)

    image_tower = ImageTower().to(device)
    text_tower = TextTower().to(device)
    # learned positional table kept outside the towers (shared with a captioning head later)
    pos_table = (torch.randn(SEQ, WIDTH, device=device) * 0.02).requires_grad_()
    logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07), device=device))

    params = list(image_tower.parameters()) + list(text_tower.parameters())
    optimizer = torch.optim.AdamW(
        [
            {"params": params, "weight_decay": 0.1},
            {"params": [pos_table, logit_scale], "weight_decay": 0.0},
        ],
        lr=args.lr,
        betas=(0.9, 0.98),
        eps=1e-6,
    )
    sched = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 30))

    history = []
    for step in range(args.steps):
        img, ids = synthetic_batch(rng, args.batch)
        img = img.to(device).float() / 255.0
        img = (img - 0.5) / 0.25
        ids = ids.to(device)
        xs.mark_sharding(img, mesh, ("data", None, None, None))
        xs.mark_sharding(ids, mesh, ("data", None))

        loss, logits = clip_loss(image_tower(img), text_tower(ids, pos_table), logit_scale)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        sched.step()
        with torch.no_grad():
            logit_scale.clamp_(0, math.log(100))
        torch_xla.sync()

        if step % 50 == 0 or step == args.steps - 1:
            r1, r5 = recall_at(logits.detach(), 1), recall_at(logits.detach(), 5)
            row = {
                "step": step,
                "loss": loss.item(),
                "temperature": 1.0 / logit_scale.exp().item(),
                "recall": torch.stack([r1, r5]).cpu().tolist(),
            }
            history.append(row)
            print(json.dumps(row))

    with open(os.path.join(args.out, "history.json"), "w") as fh:
        json.dump(history, fh, indent=1)
    xm.save(
        {
            "image": image_tower.state_dict(),
            "text": text_tower.state_dict(),
            "pos_table": pos_table.detach(),
            "logit_scale": logit_scale.detach(),
        },
        os.path.join(args.out, "clip.pt"),
    )
    emb = F.normalize(text_tower(ids, pos_table), dim=-1).detach().cpu().numpy()
    np.save(os.path.join(args.out, "last_text_emb.npy"), emb)


if __name__ == "__main__":
    main()
