"""An LSTM sequence classifier fed by a DataLoader through torch-xla's MpDeviceLoader, with
gradient clipping; bf16 switched on through os.environ.update in main()."""

import argparse
import os

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader, TensorDataset


class SequenceClassifier(nn.Module):
    def __init__(self, inputs=5, hidden=32, classes=3):
        super().__init__()
        self.lstm = nn.LSTM(inputs, hidden, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, seq):
        out, _ = self.lstm(seq)
        return self.head(out.mean(dim=1))


def sequences(n, length, gen):
    """Class 0: rising, 1: falling, 2: oscillating, on five noisy channels."""
    labels = torch.randint(0, 3, (n,), generator=gen)
    t = torch.linspace(0, 1, length).view(1, length, 1)
    shape = torch.where(labels.view(n, 1, 1) == 0, t, torch.where(labels.view(n, 1, 1) == 1, 1 - t, torch.sin(12 * t)))
    return shape + 0.3 * torch.randn(n, length, 5, generator=gen), labels


def main():
    os.environ.update({"NEURON_RT_STOCHASTIC_ROUNDING_EN": "1"})
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    x, y = sequences(2048, 20, torch.Generator().manual_seed(8))
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True, drop_last=True)
    model = SequenceClassifier().to(device)
    model.to(torch.bfloat16)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=3e-3)
    loss_fn = nn.CrossEntropyLoss()
    step = 0
    while step < args.steps:
        for seq, labels in pl.MpDeviceLoader(loader, device):
            optimizer.zero_grad()
            loss = loss_fn(model(seq.to(torch.bfloat16)), labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            xm.optimizer_step(optimizer)
            step += 1
            if step == args.steps:
                break


if __name__ == "__main__":
    main()
