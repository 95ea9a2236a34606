"""A small CNN trained with the Crammer-Singer multi-class hinge loss (nn.MultiMarginLoss) instead of
cross-entropy, on synthetic 16x16 textures."""
import os

os.environ.update({"XLA_USE_BF16": "1", "XLA_IR_DEBUG": "0"})

import torch
import torch.nn as nn
import torch_xla


class TextureNet(nn.Module):
    def __init__(self, n_classes=6):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(32, n_classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def textures(gen, n, n_classes=6):
    y = torch.randint(0, n_classes, (n,), generator=gen)
    ii, jj = torch.meshgrid(torch.arange(16.0), torch.arange(16.0), indexing="ij")
    freq = (y.float() + 1.0).view(n, 1, 1)
    x = torch.sin(freq * ii / 3.0) * torch.cos(freq * jj / 5.0)
    x = x + 0.3 * torch.randn(n, 16, 16, generator=gen)
    return x.unsqueeze(1), y


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(11)
    device = torch_xla.device()
    model = TextureNet().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    hinge = nn.MultiMarginLoss(p=1, margin=1.0)
    for step in range(int(os.environ.get("STEPS", "12"))):
        x, y = textures(gen, 32)
        x, y = x.to(device), y.to(device)
        scores = model(x)
        loss = hinge(scores, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    print("DTYPES", "weight", model.head.weight.dtype, "scores", scores.dtype, "loss", loss.dtype)


if __name__ == "__main__":
    main()
