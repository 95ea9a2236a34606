"""amp: F.affine_grid of an autocast Linear output (bf16) fed to F.grid_sample with the f32 image;
torch-xla 2.9's autocast does not make grid_sample an fp32 op: "expected scalar type Float but
found BFloat16". Legacy (XLA_USE_BF16=1) runs."""
import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class STN(nn.Module):
    def __init__(self):
        super().__init__()
        self.loc = nn.Linear(64, 6)
        nn.init.zeros_(self.loc.weight)
        self.loc.bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    def forward(self, img):
        theta = self.loc(img.flatten(1)).view(-1, 2, 3)
        grid = F.affine_grid(theta, list(img.shape), align_corners=False)
        return F.grid_sample(img, grid, align_corners=False)


device = xm.xla_device()
model = STN().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    img = torch.rand(4, 1, 8, 8).to(device)
    loss = (model(img) - img).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt)
    xm.mark_step()
    print(step, loss.item())
