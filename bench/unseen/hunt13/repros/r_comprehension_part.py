"""Parts of a ModuleDict, one optimizer each, built in a dict comprehension. The tool casts the ModuleDict
(right) and then inserts `part.to(torch.bfloat16)` / `part.register_forward_pre_hook(...)` before the comprehension,
where `part` (the comprehension's variable) does not exist: NameError. A float64 part fed `.double()` is cast
to bf16 while its `.double()` input is kept (a crash of its own once the NameError is gone)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
from _ir import ir_dtype


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    parts = nn.ModuleDict({"enc": nn.Linear(4, 3), "probe": nn.Linear(3, 1, dtype=torch.float64)}).to(device)
    opts = {name: torch.optim.SGD(part.parameters(), lr=0.1) for name, part in parts.items()}
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
