"""Keyword-spotting style 1-D CNN on synthetic waveforms, one process per XLA device (xmp.spawn)."""

import argparse
import math

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

SAMPLE_RATE = 1600
NUM_CLASSES = 6


class ConvBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, kernel_size=9, stride=stride, padding=4, bias=False)
        self.bn = nn.BatchNorm1d(cout)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class KeywordNet(nn.Module):
    def __init__(self, classes: int = NUM_CLASSES):
        super().__init__()
        self.features = nn.Sequential(
            ConvBlock(1, 16, 4), ConvBlock(16, 32, 4), ConvBlock(32, 32, 2), nn.AdaptiveAvgPool1d(1)
        )
        self.classifier = nn.Linear(32, classes)

    def forward(self, wav):
        return self.classifier(self.features(wav).squeeze(-1))


def synthetic_keywords(n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, NUM_CLASSES, (n,), generator=g)
    t = torch.arange(SAMPLE_RATE) / SAMPLE_RATE
    freqs = 60.0 + 40.0 * labels.float()
    wav = torch.sin(2 * math.pi * freqs[:, None] * t[None, :]) + 0.3 * torch.randn(n, SAMPLE_RATE, generator=g)
    return wav.unsqueeze(1), labels


def _mp_fn(index, flags):
    torch.manual_seed(flags.seed)
    device = torch_xla.device()
    wav, labels = synthetic_keywords(flags.batch_size * 8, seed=flags.seed)
    dataset = TensorDataset(wav, labels)
    sampler = DistributedSampler(
        dataset, num_replicas=xr.world_size(), rank=xr.global_ordinal(), shuffle=True, seed=flags.seed
    )
    loader = DataLoader(dataset, batch_size=flags.batch_size, sampler=sampler, drop_last=True)
    device_loader = pl.MpDeviceLoader(loader, device)

    model = KeywordNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=flags.lr * xr.world_size(), momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    step = 0
    for epoch in range(100):
        sampler.set_epoch(epoch)
        for wav_b, label_b in device_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(wav_b), label_b)
            loss.backward()
            xm.optimizer_step(optimizer)
            step += 1
            if step % 5 == 0:
                xm.master_print(f"step {step} loss {loss.item():.4f}")
            if step >= flags.steps:
                return


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-cores", type=int, default=None)
    flags = parser.parse_args()
    xmp.spawn(_mp_fn, args=(flags,), nprocs=flags.num_cores)
