"""G6 (gpu-compatible): parameters updated by hand (`p.data -= lr * g`) with gradients from
torch.autograd.grad, no backward() and no optimizer. gpu-compatible means FP32 master weights; with a
backward() the tool keeps the switch (BFM017 by_hand), here it migrates and the update stays bf16:
50 updates of 1e-3 on a weight of 1.0 vanish (bf16 spacing at 1.0 is 2**-7); FP32 master weights give 0.95.
The switch comes from the launcher (LEGACY_ENV)."""
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
from _ir import ir_dtype


def main():
    device = torch_xla.device()
    model = nn.Linear(1, 1, bias=False).to(device)
    with torch.no_grad():
        model.weight.fill_(1.0)
    x = torch.ones(4, 1).to(device)
    for step in range(50):
        loss = model(x).mean()
        (g,) = torch.autograd.grad(loss, [model.weight])
        with torch.no_grad():
            for p in model.parameters():
                p.data -= 1e-3 * g
        xm.mark_step()
    print("weight after 50 updates of -1e-3:", model.weight.item(), "; IR", ir_dtype(model.weight))
    print("parameters FP32 anywhere:", any(p.dtype == torch.float32 and ir_dtype(p) == "f32" for p in model.parameters()))


if __name__ == "__main__":
    main()
