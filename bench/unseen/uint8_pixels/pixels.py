"""A CNN on uint8 images scaled on the device."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


def batches(n, seed):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n):
        y = torch.randint(0, 4, (16,), generator=g)
        pixels = (torch.rand(16, 3, 16, 16, generator=g) * 200 + y.view(-1, 1, 1, 1) * 10).to(torch.uint8)
        yield {"pixels": pixels, "label": y}


def main():
    torch.manual_seed(0)
    device = xm.xla_device()
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4)
    ).to(device)
    mean = torch.tensor([0.5, 0.5, 0.5], device=device).view(1, 3, 1, 1)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for step, batch in enumerate(batches(12, 0)):
        images = batch["pixels"].to(device).float() / 255.0
        images = images - mean
        labels = batch["label"].to(device)
        loss = F.cross_entropy(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    os.environ["XLA_USE_BF16"] = "1"
    main()
