"""Gap: `(logits.argmax(1) == 0).float()` after `logits, labels = model(x)` (a tuple-unpacked model
output) is left f32 (accuracy computed in f32 on the device where the switch made it bf16), while
the same line after `logits = model(x)[0]` becomes `.to(torch.bfloat16)` (BFM154). verify FAILs on it
(trace BFM201)."""
import os
os.environ["XLA_USE_BF16"] = "1"
import torch, torch.nn as nn, torch_xla, torch_xla.core.xla_model as xm

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(8, 4)
    def forward(self, x):
        out = self.l(x)
        return out, torch.zeros(out.shape[0], dtype=torch.long, device=out.device)

dev = torch_xla.device()
model = Net().to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(16, 8).to(dev)
    logits, labels = model(x)
    loss = nn.functional.cross_entropy(logits, labels)
    opt.zero_grad(); loss.backward(); opt.step(); xm.mark_step()
    acc = (logits.argmax(1) == 0).float().mean()
    acc2 = (logits.argmax(1) == labels).float().mean()
    print(acc.item(), acc2.item())
