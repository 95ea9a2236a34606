"""XLA_DOWNCAST_BF16 with a float64 head fed `.double()` (f32 on the device under the switch, the body bf16). The tool
rewrites `dtype=torch.float64` -> torch.float32 and `.double()` -> `.float()` (BFM048), then `model.to(torch.bfloat16)`
casts the head to bf16 as well: the f32 `.float()` input meets the bf16 head (mixed precision at the sync). A float64
log-prior goes through floating_to_bf16 (bf16; the legacy run had it f32)."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
from _ir import ir_dtype


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.head = nn.Linear(8, 3, dtype=torch.float64)

    def forward(self, x):
        return self.head(self.body(x).double())


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = Net().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    log_prior = torch.as_tensor(np.log([0.7, 0.25, 0.05]), device=device)
    x = torch.randn(16, 4).to(device)
    y = torch.randint(0, 3, (16,)).to(device)
    logits = model(x)
    adjusted = logits + log_prior
    loss = F.cross_entropy(adjusted, y)
    loss.backward()
    opt.step()
    torch_xla.sync()
    print("body weight IR", ir_dtype(model.body.weight), "| head weight IR", ir_dtype(model.head.weight),
          "| log_prior IR", ir_dtype(log_prior), "| logits IR", ir_dtype(logits))


if __name__ == "__main__":
    main()
