
import torch  # noqa: E402
import torch_xla  # noqa: E402

device = torch_xla.device()
model = torch.nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(8, 4).to(device)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("dtype", model.weight.dtype, loss.dtype)
