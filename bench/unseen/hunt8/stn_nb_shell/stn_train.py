"""Spatial transformer in front of a CoordConv classifier, on synthetic shifted glyphs."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


def coord_channels(batch, h, w, device):
    ys = torch.linspace(-1.0, 1.0, h, device=device)
    xs = torch.linspace(-1.0, 1.0, w, device=device)
    gy, gx = torch.meshgrid(ys, xs, indexing="ij")
    return torch.stack((gx, gy)).unsqueeze(0).expand(batch, -1, -1, -1)


class STNClassifier(nn.Module):
    def __init__(self, classes=5):
        super().__init__()
        self.loc = nn.Sequential(
            nn.Conv2d(1, 8, 5, stride=2, padding=2), nn.ReLU(),
            nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(8 * 16, 32), nn.ReLU(), nn.Linear(32, 6))
        nn.init.zeros_(self.loc[-1].weight)
        self.loc[-1].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU())
        self.head = nn.Linear(32, classes)

    def forward(self, img):
        theta = self.loc(img).view(-1, 2, 3)
        grid = F.affine_grid(theta, list(img.shape), align_corners=False)
        warped = F.grid_sample(img, grid, align_corners=False, padding_mode="zeros")
        up = F.interpolate(warped, scale_factor=2, mode="bilinear", align_corners=False)
        b, _, h, w = up.shape
        h_in = torch.cat([up, coord_channels(b, h, w, up.device)], dim=1)
        feats = self.features(h_in).mean(dim=(2, 3))
        return self.head(feats), warped


def glyphs(n, gen, size=16, classes=5):
    labels = torch.randint(0, classes, (n,), generator=gen)
    img = torch.zeros(n, 1, size, size)
    for i in range(n):
        c = int(labels[i])
        dy, dx = torch.randint(-3, 4, (2,), generator=gen).tolist()
        r0, c0 = 5 + dy, 5 + dx
        img[i, 0, r0:r0 + 6, c0 + c] = 1.0
        img[i, 0, r0 + c % 3, c0:c0 + 6] = 1.0
    return img + 0.05 * torch.randn(img.shape, generator=gen), labels


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()

    device = xm.xla_device()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(5)
    model = STNClassifier().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    model.train()
    for step in range(args.steps):
        img, labels = glyphs(args.batch, gen)
        img, labels = img.to(device), labels.to(device)
        logits, warped = model(img)
        loss = F.cross_entropy(logits, labels) + 0.1 * F.mse_loss(warped, img)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)

    model.eval()
    img, labels = glyphs(8, gen)
    with torch.no_grad():
        logits, _ = model(img.to(device))
        theta = model.loc(img.to(device)).view(-1, 2, 3)
    print("accuracy", (logits.argmax(1).cpu() == labels).float().mean().item())
    print("mean theta", theta.mean(0).cpu().numpy().round(3).tolist())


if __name__ == "__main__":
    main()
