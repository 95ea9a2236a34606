"""A training script whose optimizer comes from a sibling module the user copies in before running
(`cp ../common/fp32_state_adam.py .`), so it is not in the tree handed to bf16-migrate. Under the mixed
path the script sets XLA_DOWNCAST_BF16 and the helper reads it to keep its state in float64 (= f32 on
the device under DOWNCAST). Written for hunt51 in the shape of aws-neuron-samples' llama2 tp_zero1 script."""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from fp32_state_adam import FP32StateAdam


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mix", action="store_true")
    args = p.parse_args()
    if args.mix:
        os.environ["XLA_DOWNCAST_BF16"] = "1"
    else:
        os.environ["XLA_USE_BF16"] = "1"
    torch.manual_seed(0)
    dev = torch_xla.device()
    net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(dev)
    opt = FP32StateAdam(net.parameters(), lr=1e-2) if args.mix else torch.optim.AdamW(net.parameters(), lr=1e-2)
    running = torch.zeros(1, dtype=torch.double).to(dev)
    g = torch.Generator().manual_seed(1)
    for step in range(int(os.environ.get("STEPS", "4"))):
        x = torch.randn(8, 16, generator=g).to(dev)
        y = torch.randint(0, 4, (8,), generator=g).to(dev)
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        running += loss.detach()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f}")
    st = next(iter(opt.state.values()))
    print("DTYPES running", running.dtype, "exp_avg", st["exp_avg"].dtype,
          "upcast", getattr(opt, "upcast", None))


if __name__ == "__main__":
    main()
