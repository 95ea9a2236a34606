"""Tiny transformer encoder that classifies token sequences.

Task: label a sequence 1 if the marker token appears anywhere in it, else 0.
Batches are fed to the XLA device through MpDeviceLoader. bf16 is enabled
with XLA_USE_BF16 unless the caller already set it in the environment.
"""
import os
import sys

os.environ.setdefault("NEURON_RT_STOCHASTIC_ROUNDING_EN", "1")

import argparse

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader, TensorDataset

VOCAB_SIZE = 64
SEQ_LEN = 16
MARKER_TOKEN = 7


class TinyEncoderClassifier(nn.Module):
    def __init__(self, vocab_size, seq_len, d_model=32, nhead=4, num_layers=1, num_classes=2):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Parameter(0.02 * torch.randn(1, seq_len, d_model))
        layer = nn.TransformerEncoderLayer(
            d_model=d_model,
            nhead=nhead,
            dim_feedforward=2 * d_model,
            dropout=0.0,
            batch_first=True,
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers=num_layers, enable_nested_tensor=False)
        self.classifier = nn.Linear(d_model, num_classes)

    def forward(self, input_ids):
        h = self.embed(input_ids) + self.pos
        h = self.encoder(h)
        return self.classifier(h.mean(dim=1))


def build_dataset(num_samples, seed):
    """Random token ids; about half the sequences get the marker planted at a random position."""
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, VOCAB_SIZE, (num_samples, SEQ_LEN), generator=gen)
    tokens[tokens == MARKER_TOKEN] = MARKER_TOKEN + 1
    plant = torch.rand(num_samples, generator=gen) < 0.5
    where = torch.randint(0, SEQ_LEN, (num_samples,), generator=gen)
    tokens[plant, where[plant]] = MARKER_TOKEN
    labels = (tokens == MARKER_TOKEN).any(dim=1).long()
    return tokens, labels


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Tiny transformer marker-detection task")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--lr", type=float, default=7e-3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-samples", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    device = torch_xla.device()

    tokens, labels = build_dataset(args.num_samples, args.seed)
    loader = DataLoader(TensorDataset(tokens, labels), batch_size=args.batch_size, shuffle=True, drop_last=True)
    device_loader = pl.MpDeviceLoader(loader, device)

    model = TinyEncoderClassifier(VOCAB_SIZE, SEQ_LEN).to(device)
    torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True)
    model.to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()

    model.train()
    step = 0
    running_loss = torch.zeros(1, device=device, dtype=torch.float32)
    n = 0
    while step < args.steps:
        for input_ids, labels in device_loader:
            optimizer.zero_grad()
            logits = model(input_ids)
            loss = loss_fn(logits, labels)
            loss.backward()
            xm.optimizer_step(optimizer)
            running_loss += loss.detach()
            n += 1
            step += 1
            if step % 10 == 0:
                # Flush the pending step first so .item() does not trace a partial graph.
                torch_xla.sync()
                print(f"step {step} loss {running_loss.item() / n:.4f}")
                running_loss.zero_()
                n = 0
            if step >= args.steps:
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
