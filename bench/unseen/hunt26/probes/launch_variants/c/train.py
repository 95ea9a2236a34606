import torch
import torch.nn.functional as F
import torch_xla

device = torch_xla.device()
model = torch.nn.Linear(8, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x, y = torch.randn(16, 8).to(device), torch.randn(16, 2).to(device)
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
print("loss", loss.item(), "weight dtype", model.weight.dtype)
