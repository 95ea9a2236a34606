"""A script with its own autocast flag written for the Neuron habit (device_type='cuda' with
torch.cuda.is_bf16_supported patched), launched with XLA_DOWNCAST_BF16=1 when the flag is off (run.sh).
Written for hunt51 in the shape of aws-neuron-samples' dp_bert script."""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

torch.cuda.is_bf16_supported = lambda: True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--enable_pt_autocast", action="store_true")
    flags = p.parse_args()
    torch.manual_seed(0)
    dev = torch_xla.device()
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(1)
    for step in range(int(os.environ.get("STEPS", "4"))):
        x = torch.randn(8, 16, generator=g).to(dev)
        y = torch.randint(0, 4, (8,), generator=g).to(dev)
        opt.zero_grad()
        with torch.autocast(enabled=flags.enable_pt_autocast, dtype=torch.bfloat16, device_type="cuda"):
            logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f} logits {logits.dtype}")


if __name__ == "__main__":
    main()
