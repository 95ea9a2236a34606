"""Writes decoded samples as binary PGM tiles (no torchvision, no PIL on the image)."""
import os

import torch


@torch.no_grad()
def decode_grid(model, n, latent, device):
    z = torch.randn(n, latent, device=device)
    x = torch.sigmoid(model.decode(z))
    return (x * 255).round().byte().cpu()


def write_pgm(path, tile, side):
    rows = tile.view(-1, side, side)
    n = rows.shape[0]
    grid = torch.cat([rows[i] for i in range(n)], dim=1)
    h, w = grid.shape
    with open(path, "wb") as f:
        f.write(f"P5 {w} {h} 255\n".encode())
        f.write(bytes(grid.flatten().tolist()))


def save_samples(model, out_dir, latent, device, n=8, side=8):
    os.makedirs(out_dir, exist_ok=True)
    tiles = decode_grid(model, n, latent, device)
    write_pgm(os.path.join(out_dir, "samples.pgm"), tiles, side)
    return tiles
