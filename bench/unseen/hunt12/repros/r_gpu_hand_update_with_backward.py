"""G8 contrast (rewrite only): r_gpu_hand_update_no_backward.py with `loss.backward()` and `p.grad` instead of
torch.autograd.grad: `bf16-migrate --mode gpu-compatible` with the switch from `--legacy-env` keeps the switch here (BFM017
"the script updates its parameters by hand"), and migrates the twin without master weights."""
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
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p.data -= 1e-3 * p.grad
        xm.mark_step()
    print("weight after 50 updates of -1e-3:", model.weight.item(), "; IR", ir_dtype(model.weight))
    print("parameters FP32 anywhere:", any(p.dtype == torch.float32 and ir_dtype(p) == "f32" for p in model.parameters()))


if __name__ == "__main__":
    main()
