"""Fine-tune a small residual MLP classifier the way long jobs run: checkpoint, restart, resume.

Single-device PyTorch/XLA script. bf16 is switched on the old way, through XLA_DOWNCAST_BF16,
before torch is imported. The job saves model, optimizer, LR scheduler and data-order state with
`xm.save` every `--checkpoint-every` steps; `--restart-at N` emulates a preemption at step N:
everything is dropped, rebuilt from scratch and loaded from the last checkpoint, as a new
allocation of the job would do with `--resume`.
"""
import os
os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import argparse
import math
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


NUM_SAMPLES = 4096
FEATURES = 48
CLASSES = 6


class ResidualBlock(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return x + F.gelu(self.fc(self.norm(x)))


class Classifier(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.stem = nn.Linear(FEATURES, width)
        self.blocks = nn.Sequential(*[ResidualBlock(width) for _ in range(depth)])
        self.head = nn.Linear(width, CLASSES)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


def make_dataset(seed):
    """Gaussian blobs: features ~ N(centre of class, 1), labels are int64 class ids."""
    gen = torch.Generator().manual_seed(seed)
    centres = 0.35 * torch.randn(CLASSES, FEATURES, generator=gen)
    labels = torch.randint(0, CLASSES, (NUM_SAMPLES,), generator=gen)
    features = centres[labels] + torch.randn(NUM_SAMPLES, FEATURES, generator=gen)
    return features, labels


def parameter_groups(model, weight_decay):
    """Weight decay on the matrices only (the usual split: no decay for biases and norms)."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        (no_decay if param.ndim < 2 or "norm" in name else decay).append(param)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def warmup_cosine(warmup, total):
    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total - warmup)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
    return factor


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--weight-decay", type=float, default=0.05)
    parser.add_argument("--max-grad-norm", type=float, default=1.0)
    parser.add_argument("--checkpoint-every", type=int, default=4)
    parser.add_argument("--restart-at", type=int, default=8, help="emulate a preemption after this step (0: never)")
    parser.add_argument("--checkpoint-dir", default=None)
    parser.add_argument("--print-every", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def build(args, device):
    """Model, optimizer and LR scheduler, as a fresh process of the job builds them."""
    torch.manual_seed(args.seed)
    model = Classifier(args.width, args.depth).to(device)
    model.to(torch.bfloat16)
    optimizer = torch.optim.AdamW(parameter_groups(model, args.weight_decay), lr=args.lr, betas=(0.9, 0.98))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(args.steps // 10, args.steps))
    return model, optimizer, scheduler


def save_checkpoint(path, step, model, optimizer, scheduler, batch_gen):
    xm.save(
        {
            "step": step,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "data_rng": batch_gen.get_state(),
        },
        path,
    )


def resume(path, model, optimizer, scheduler, batch_gen):
    checkpoint = torch.load(path, weights_only=False)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    batch_gen.set_state(checkpoint["data_rng"])
    return checkpoint["step"]


def main():
    args = parse_args()
    device = torch_xla.device()
    checkpoint_dir = args.checkpoint_dir or tempfile.mkdtemp(prefix="resume-ckpt-")
    checkpoint_path = os.path.join(checkpoint_dir, "last.pt")

    features, labels = make_dataset(args.seed)
    model, optimizer, scheduler = build(args, device)
    batch_gen = torch.Generator().manual_seed(args.seed + 1)

    step = 0
    while step < args.steps:
        step += 1
        model.train()
        idx = torch.randint(0, NUM_SAMPLES, (args.batch_size,), generator=batch_gen)
        x = features[idx].to(device)
        y = labels[idx].to(device)

        optimizer.zero_grad(set_to_none=True)
        logits = model(x.to(torch.bfloat16))
        loss = F.cross_entropy(logits, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
        xm.optimizer_step(optimizer)
        scheduler.step()
        xm.mark_step()

        if step % args.print_every == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        if step % args.checkpoint_every == 0:
            save_checkpoint(checkpoint_path, step, model, optimizer, scheduler, batch_gen)
        if step == args.restart_at:
            # the allocation ends: a new process of the job rebuilds everything and resumes
            del model, optimizer, scheduler
            model, optimizer, scheduler = build(args, device)
            batch_gen = torch.Generator()
            step = resume(checkpoint_path, model, optimizer, scheduler, batch_gen)
            print(f"resumed from {checkpoint_path} at step {step}", flush=True)


if __name__ == "__main__":
    main()
