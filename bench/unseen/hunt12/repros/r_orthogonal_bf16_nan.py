"""G5: a model with `parametrizations.orthogonal` (the default map for a square weight: matrix_exp) cast to
bf16 by the migration. Under the switch torch saw float32 and chose matrix_exp's float32 algorithm (the device
computed it in bf16); with the model really bf16 the gradient through matrix_exp explodes at the first step
(on the XLA device and on the CPU alike: probe_orthogonal_bf16.py) and the weights go NaN.
The switch comes from the launcher (LEGACY_ENV)."""
import torch
import torch.nn as nn
from torch.nn.utils import parametrizations
import torch_xla
import torch_xla.core.xla_model as xm
from _ir import ir_dtype


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Sequential(parametrizations.orthogonal(nn.Linear(32, 32, bias=False)), nn.Tanh(), nn.Linear(32, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(4):
        x = torch.randn(8, 32).to(device)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        original = model[0].parametrizations.weight.original
        print(f"step {step}: loss {loss.item():.4f}  |original|max {original.abs().max().item():.3g}  (IR {ir_dtype(original)})")


if __name__ == "__main__":
    main()
