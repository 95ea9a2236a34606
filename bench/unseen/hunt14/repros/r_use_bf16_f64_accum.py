"""XLA_USE_BF16 (from a launcher) and an explicit float64 accumulator on the device: under the switch it
was bf16 (XLA_USE_BF16 makes f64 bf16 too; only XLA_DOWNCAST_BF16 keeps it f32). The migration leaves
`dtype=torch.float64` / `.double()` as written: after it the accumulator is a real f64 on the device
(slow on TPU, unsupported on Neuron) and sums what the legacy run summed in bf16."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(8, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
total = torch.zeros((), dtype=torch.float64, device=device)
g = torch.Generator().manual_seed(0)
for step in range(40):
    x = torch.randn(32, 8, generator=g).to(device)
    loss = F.mse_loss(model(x).squeeze(-1), x.sum(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    total += loss.detach().double()
    xm.mark_step()
print(f"sum of 40 losses {total.item():.6f} (a bf16 number? {float(torch.tensor(total.item()).bfloat16()) == total.item()})")
