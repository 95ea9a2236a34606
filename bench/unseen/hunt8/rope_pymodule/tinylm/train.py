"""python -m tinylm.train: train TinyLM on a synthetic copy task with gradient accumulation."""
import argparse

import torch
import torch_xla
import torch_xla.core.xla_model as xm

from tinylm.model import TinyLM, smoothed_nll


def batches(gen, batch, seq, vocab):
    while True:
        half = torch.randint(1, vocab, (batch, seq // 2), generator=gen)
        yield torch.cat([half, half], dim=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--accum", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=24)
    args = ap.parse_args()

    device = torch_xla.device()
    torch.manual_seed(0)
    model = TinyLM().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.05)
    data = batches(torch.Generator().manual_seed(3), args.batch, args.seq, 64)

    for step in range(args.steps):
        opt.zero_grad()
        for micro in range(args.accum):
            ids = next(data).to(device)
            logits = model(ids[:, :-1])
            loss = smoothed_nll(logits, ids[:, 1:]) / args.accum
            loss.backward()
        xm.optimizer_step(opt)
        torch_xla.sync()
        print(f"step {step} loss {loss.item() * args.accum:.4f}", flush=True)

    model.eval()
    with torch.no_grad():
        ids = next(data)[:2].to(device)
        pred = model(ids[:, :-1]).argmax(-1)
        copied = (pred[:, args.seq // 2:] == ids[:, args.seq // 2 + 1:]).float().mean()
    print(f"copy accuracy {copied.item():.3f}")


if __name__ == "__main__":
    main()
