"""A tiny Vision Transformer on synthetic 16x16 images (patches of 4, class token, learned positions).

The job spec in k8s/ switches bf16 on for the container; this script never names the variable.
"""

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class PatchEmbed(nn.Module):
    def __init__(self, img_size: int, patch: int, chans: int, dim: int):
        super().__init__()
        self.proj = nn.Conv2d(chans, dim, kernel_size=patch, stride=patch)
        self.num_patches = (img_size // patch) ** 2

    def forward(self, x):
        x = self.proj(x)  # B, D, H/p, W/p
        return x.flatten(2).transpose(1, 2)


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(b, n, d)
        return self.out(y)


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_ratio: float = 2.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    def __init__(self, img_size=16, patch=4, chans=3, dim=48, depth=2, heads=4, classes=10):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size, patch, chans, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, self.patch_embed.num_patches + 1, dim) * 0.02)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch_embed(x)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos_embed
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x)[:, 0])


def synthetic_images(n: int, classes: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, classes, (n,), generator=g)
    # each class gets its own colour bias so the task is learnable
    bias = torch.linspace(-1.0, 1.0, classes)[labels].view(n, 1, 1, 1)
    images = torch.randn(n, 3, 16, 16, generator=g) * 0.5 + bias
    return images, labels


def cosine_lr(epoch: int, warmup: int, total: int):
    """Linear warmup, then half a cosine; stepped once per epoch."""
    if epoch < warmup:
        return (epoch + 1) / warmup
    progress = (epoch - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--clip", type=float, default=1.0)
    parser.add_argument("--steps-per-epoch", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch_xla.device()
    model = ViT().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.05)
    epochs = -(-args.steps // args.steps_per_epoch)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda e: cosine_lr(e, 1, epochs))

    images, labels = synthetic_images(args.batch_size * 8, 10)
    model.train()
    for step in range(args.steps):
        i = (step % 8) * args.batch_size
        x = images[i : i + args.batch_size].to(device)
        y = labels[i : i + args.batch_size].to(device)
        optimizer.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits, y, label_smoothing=0.1)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        xm.optimizer_step(optimizer)
        if (step + 1) % args.steps_per_epoch == 0:
            scheduler.step()
        if step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
