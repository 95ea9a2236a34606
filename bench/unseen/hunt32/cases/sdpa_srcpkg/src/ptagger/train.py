import argparse

import torch
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from ptagger.data import padding_bias, toy_batch
from ptagger.model import PosTagger

VOCAB, TAGS, MAX_LEN = 50, 6, 24


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--lr", type=float, default=3e-3)
    args = p.parse_args()

    device = xm.xla_device()
    gen = torch.Generator().manual_seed(0)
    model = PosTagger(VOCAB, TAGS, max_len=MAX_LEN).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    for step in range(args.steps):
        ids, tags, keep = toy_batch(gen, 16, MAX_LEN, VOCAB, TAGS)
        bias = padding_bias(keep, device)
        logits = model(ids.to(device), bias)
        loss = F.cross_entropy(logits.reshape(-1, TAGS), tags.to(device).reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt, barrier=True)
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.3f}")
    print("DTYPES", model.cls.weight.dtype, model.pe.dtype, bias.dtype, logits.dtype)


if __name__ == "__main__":
    main()
