"""A spatial transformer network: a localisation net predicts an affine warp, the warped 32x32 image is
downsampled with an anti-aliased resize and classified."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


class STNClassifier(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(1, 8, 5, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(),
                                 nn.Linear(8 * 16, 32), nn.ReLU(), nn.Linear(32, 6))
        nn.init.zeros_(self.loc[-1].weight)
        with torch.no_grad():
            self.loc[-1].bias.copy_(torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]))
        self.cls = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Flatten(), nn.Linear(16 * 8 * 8, n_classes))

    def forward(self, img):
        theta = self.loc(img).view(-1, 2, 3)
        grid = F.affine_grid(theta, img.size(), align_corners=False)
        warped = F.grid_sample(img, grid, align_corners=False, padding_mode="zeros")
        small = F.interpolate(warped, size=(16, 16), mode="bilinear", antialias=True, align_corners=False)
        return self.cls(small)


def shapes(gen, n, n_classes=4):
    y = torch.randint(0, n_classes, (n,), generator=gen)
    ii, jj = torch.meshgrid(torch.linspace(-1, 1, 32), torch.linspace(-1, 1, 32), indexing="ij")
    img = torch.zeros(n, 1, 32, 32)
    shift = (torch.rand(n, 2, generator=gen) - 0.5) * 0.8
    for k in range(n):
        u, v = ii - shift[k, 0], jj - shift[k, 1]
        c = int(y[k])
        m = [(u.abs() < 0.3) & (v.abs() < 0.3), u * u + v * v < 0.09, (u.abs() < 0.1) | (v.abs() < 0.1), u + v > 0.3][c]
        img[k, 0] = m.float()
    return img + 0.05 * torch.randn(n, 1, 32, 32, generator=gen), y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(2)
    device = torch_xla.device()
    model = STNClassifier().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    for step in range(args.steps):
        img, y = shapes(gen, 16)
        img, y = img.to(device), y.to(device)
        logits = model(img)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    print("DTYPES", "weight", model.cls[-1].weight.dtype, "logits", logits.dtype, "loss", loss.dtype)


if __name__ == "__main__":
    main()
