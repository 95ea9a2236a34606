"""A float64 layer fed `.double()` under XLA_USE_BF16 (both bf16 on the device under the switch), one optimizer over
the ModuleDict: the tool casts the ModuleDict (the f64 layer too) and keeps `.double()` and the f64 target."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
from _ir import ir_dtype


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    parts = nn.ModuleDict({"enc": nn.Linear(4, 3), "probe": nn.Linear(3, 1, dtype=torch.float64)}).to(device)
    opts = {"all": torch.optim.SGD(parts.parameters(), lr=0.1)}
    x = torch.randn(8, 4).to(device)
    y = (torch.rand(8) > 0.5).double().to(device)
    z = parts["enc"](x)
    score = parts["probe"](z.detach().double()).squeeze(-1)
    loss = z.square().mean() + F.binary_cross_entropy_with_logits(score, y)
    loss.backward()
    for opt in opts.values():
        opt.step()
    torch_xla.sync()
    print("z IR", ir_dtype(z), "score IR", ir_dtype(score), "loss IR", ir_dtype(loss))


if __name__ == "__main__":
    main()
