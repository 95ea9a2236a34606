"""WGAN-GP on an 8-Gaussian ring; a density image of the generator's samples is written as a PGM at the end."""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

Z_DIM = 8


def ring_batch(rng, n, modes=8, radius=2.0, std=0.05):
    k = rng.integers(0, modes, size=n)
    ang = 2 * math.pi * k / modes
    pts = np.stack([radius * np.cos(ang), radius * np.sin(ang)], axis=1)
    return pts + std * rng.standard_normal((n, 2))


def mlp(i, o, h=64):
    return nn.Sequential(nn.Linear(i, h), nn.LeakyReLU(0.2), nn.Linear(h, h), nn.LeakyReLU(0.2), nn.Linear(h, o))


def gradient_penalty(critic, real, fake):
    alpha = torch.rand(real.size(0), 1, device=real.device)
    inter = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    out = critic(inter)
    grads = torch.autograd.grad(outputs=out, inputs=inter, grad_outputs=torch.ones_like(out),
                                create_graph=True, retain_graph=True)[0]
    return ((grads.norm(2, dim=1) - 1) ** 2).mean()


def density_image(pts, size=48, lim=3.0):
    hist, _, _ = np.histogram2d(pts[:, 0], pts[:, 1], bins=size, range=[[-lim, lim], [-lim, lim]])
    img = (255 * hist / max(hist.max(), 1)).astype(np.uint8)
    return img


def write_pgm(path, img):
    with open(path, "wb") as f:
        f.write(b"P5\n%d %d\n255\n" % (img.shape[1], img.shape[0]))
        f.write(img.tobytes())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "200")))
    ap.add_argument("--n-critic", type=int, default=5)
    ap.add_argument("--lambda-gp", type=float, default=10.0)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    G = mlp(Z_DIM, 2).to(dev)
    D = mlp(2, 1).to(dev)
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-4, betas=(0.5, 0.9))
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-4, betas=(0.5, 0.9))
    z_fixed = torch.randn(512, Z_DIM, device=dev)

    for step in range(args.steps):
        for _ in range(args.n_critic):
            real = torch.from_numpy(ring_batch(rng, 64)).float().to(dev)
            z = torch.randn(64, Z_DIM, device=dev)
            fake = G(z).detach()
            d_loss = D(fake).mean() - D(real).mean()
            gp = gradient_penalty(D, real, fake)
            opt_d.zero_grad()
            (d_loss + args.lambda_gp * gp).backward()
            opt_d.step()
            xm.mark_step()
        z = torch.randn(64, Z_DIM, device=dev)
        g_loss = -D(G(z)).mean()
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
        xm.mark_step()
        if step % 20 == 0 or step == args.steps - 1:
            print(f"step {step} d_loss {d_loss.item():.4f} gp {gp.item():.4f} g_loss {g_loss.item():.4f}")

    print("DTYPES G", G[0].weight.dtype, "D", D[0].weight.dtype, "real", real.dtype, "gp", gp.dtype)
    with torch.no_grad():
        pts = G(z_fixed).cpu().numpy()
    os.makedirs(args.out, exist_ok=True)
    write_pgm(os.path.join(args.out, "samples.pgm"), density_image(pts))
    print("samples", pts.dtype, pts.shape, "spread", float(np.linalg.norm(pts, axis=1).mean()))


if __name__ == "__main__":
    main()
