"""Resumes from ckpt/last.pt when it is there (a preemptible job), saves it every step. verify runs the legacy,
migrated and FP32 runs in this directory: a later run resumes from an earlier run's checkpoint."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

CKPT = "ckpt/last.pt"


def main():
    torch.manual_seed(0)
    device = xm.xla_device()
    model = nn.Linear(8, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    start = 0
    if os.path.exists(CKPT):
        state = torch.load(CKPT)
        model.load_state_dict(state["model"])
        start = state["step"]
        print(f"resumed from {CKPT} at step {start} (written by pid {state['pid']})")
    gen = torch.Generator().manual_seed(1)
    for step in range(start, start + 12):
        x = torch.randn(16, 8, generator=gen).to(device)
        loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        os.makedirs("ckpt", exist_ok=True)
        xm.save({"model": model.state_dict(), "step": step + 1, "pid": os.getpid()}, CKPT)
        print(step, loss.item())


main()
