"""Fine-tune a small sequence classifier; `--use_amp` runs the forward pass under autocast,
otherwise the launcher decides the precision."""

import argparse

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class SequenceClassifier(nn.Module):
    def __init__(self, vocab: int, width: int, classes: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.mix = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, tokens):
        h = self.embed(tokens)
        h = self.norm(h + self.mix(h))
        return self.head(h.mean(dim=1))


def synthetic_batches(steps, batch_size, seq_len, vocab, classes, seed):
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        tokens = torch.randint(0, vocab, (batch_size, seq_len), generator=generator)
        labels = tokens[:, 0] % classes
        yield tokens, labels


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--use_amp", action="store_true", help="forward pass and loss under torch.autocast")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--batch_size", type=int, default=32)
    return parser.parse_args()


def main(args):
    torch.manual_seed(0)
    device = torch_xla.device()
    model = SequenceClassifier(vocab=64, width=48, classes=4).to(device)
    if not args.use_amp:
        model.to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    loss_fn = nn.CrossEntropyLoss()
    batches = synthetic_batches(args.steps, args.batch_size, 12, 64, 4, seed=3)
    for step, (tokens, labels) in enumerate(batches, start=1):
        tokens, labels = tokens.to(device), labels.to(device)
        optimizer.zero_grad()
        with torch.autocast("xla", dtype=torch.bfloat16, enabled=args.use_amp):
            logits = model(tokens)
            loss = loss_fn(logits, labels)
        loss.backward()
        xm.optimizer_step(optimizer)
        torch_xla.sync()
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main(parse_args())
