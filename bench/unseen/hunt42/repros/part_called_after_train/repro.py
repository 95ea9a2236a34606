"""As part_called_eval, but the part is called once, after training (an embedding export): in amp the codemod leaves
`encoder(bank_x)` outside autocast (f32 matmuls where the legacy run had bf16), and verify's amp checks look at one
training-step graph only."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla

dev = torch_xla.device()
torch.manual_seed(0)
bank_x = torch.randn(64, 8).to(dev)
encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16))
head = nn.Linear(16, 1)
model = nn.Sequential(encoder, head).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(int(os.environ.get("STEPS", "6"))):
    x = torch.randn(32, 8).to(dev)
    loss = (model(x).squeeze(-1) - x[:, 0]).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(step, loss.item())
with torch.no_grad():
    emb = encoder(bank_x)
print("export", emb.cpu().float().abs().mean().item())
