"""Small CNN image classifier trained with a minimal Trainer class on PyTorch/XLA.

The images are synthetic: each of the four classes has its own fixed 16x16
mean pattern, and every sample is that pattern plus Gaussian noise. Reduced
precision is requested through XLA_DOWNCAST_BF16, set in main() before the
trainer touches the XLA device.
"""
import argparse
import os

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
from torch.utils.data import DataLoader, TensorDataset

NUM_CLASSES = 4
IMAGE_SIZE = 16
CHANNELS = 3


class SmallCNN(nn.Module):
    def __init__(self, num_classes=NUM_CLASSES):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(CHANNELS, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.head = nn.Linear(32 * (IMAGE_SIZE // 4) ** 2, num_classes)

    def forward(self, x):
        x = self.features(x)
        return self.head(torch.flatten(x, 1))


def make_images(num_samples, seed):
    """Class-dependent mean patterns plus unit noise."""
    gen = torch.Generator().manual_seed(seed)
    patterns = torch.randn(NUM_CLASSES, CHANNELS, IMAGE_SIZE, IMAGE_SIZE, generator=gen)
    labels = torch.arange(num_samples) % NUM_CLASSES
    noise = torch.randn(num_samples, CHANNELS, IMAGE_SIZE, IMAGE_SIZE, generator=gen)
    images = 0.5 * patterns[labels] + noise
    return images, labels.long()


class Trainer:
    def __init__(self, args):
        self.args = args
        self.device = torch_xla.device()
        self.model = SmallCNN().to(self.device)
        self.model.to(torch.bfloat16)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=args.lr, momentum=0.9)
        self.loss_fn = nn.CrossEntropyLoss()
        images, labels = make_images(args.num_samples, args.seed)
        self.loader = DataLoader(
            TensorDataset(images, labels), batch_size=args.batch_size, shuffle=True
        )

    def fit(self, steps):
        """Run `steps` optimizer steps, cycling over the loader as many epochs as needed."""
        self.model.train()
        step = 0
        epoch = 0
        while step < steps:
            epoch += 1
            for images, labels in self.loader:
                images = images.to(self.device)
                labels = labels.to(self.device)
                self.optimizer.zero_grad()
                logits = self.model(images.to(torch.bfloat16))
                loss = self.loss_fn(logits, labels)
                loss.backward()
                self.optimizer.step()
                xm.mark_step()
                step += 1
                if step % 10 == 0:
                    print(f"step {step} loss {loss.item():.4f}")
                if step >= steps:
                    break
        return epoch


def parse_args():
    parser = argparse.ArgumentParser(description="Train a small CNN on synthetic images")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--lr", type=float, default=0.03)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-samples", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main():
    args = parse_args()
    os.environ.update({"NEURON_RT_STOCHASTIC_ROUNDING_EN": "1", "OMP_NUM_THREADS": "1"})
    torch.manual_seed(args.seed)
    trainer = Trainer(args)
    trainer.fit(args.steps)


if __name__ == "__main__":
    main()
