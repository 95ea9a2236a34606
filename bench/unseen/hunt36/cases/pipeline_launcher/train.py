import argparse

import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from common import TwoMoonsNet, two_moons


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ckpt", required=True)
    p.add_argument("--steps", type=int, default=10)
    a = p.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    model = TwoMoonsNet().to(device)
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    opt = torch.optim.NAdam(model.parameters(), lr=1e-2)
    x_all, y_all = two_moons(1024)
    for step in range(a.steps):
        i = torch.randint(0, len(x_all), (64,))
        logits = model(x_all[i].to(device))
        loss = F.cross_entropy(logits, y_all[i].to(device), label_smoothing=0.05)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ema.update_parameters(model)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    print("DTYPES weight", model.net[0].weight.dtype, "ema", ema.module.net[0].weight.dtype, "loss", loss.dtype)
    torch.save({"model": model.state_dict(), "ema": ema.module.state_dict(), "steps": a.steps}, a.ckpt)


if __name__ == "__main__":
    main()
