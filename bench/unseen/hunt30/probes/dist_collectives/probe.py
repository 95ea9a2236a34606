import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.distributed as dist
import torch.nn as nn
import torch_xla
import torch_xla.runtime as xr

dist.init_process_group("xla", init_method="xla://")
device = torch_xla.device()
torch.manual_seed(0)
model = nn.Linear(8, 3).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(12):
    x, y = torch.randn(16, 8).to(device), torch.randint(0, 3, (16,)).to(device)
    logits = model(x)
    loss = nn.functional.cross_entropy(logits, y)
    opt.zero_grad(); loss.backward(); opt.step(); torch_xla.sync()
    stats = torch.stack([loss.detach(), (logits.argmax(1) == y).float().mean()])       # (a) a stacked metric
    dist.all_reduce(stats)                                                              # (b) in place
    gathered = torch.empty(dist.get_world_size() * 16, 3, device=device)               # (c) an output buffer
    dist.all_gather_into_tensor(gathered, logits.detach())                              # (d) dtype must match
    print(f"{(stats / dist.get_world_size()).tolist()} {gathered.softmax(1).mean(0).cpu().numpy()}")
