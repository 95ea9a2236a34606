"""Writes rbf_smoother.ipynb (kept so the notebook can be regenerated)."""
import nbformat

cells = [
    "%env XLA_USE_BF16=1\n%env PJRT_DEVICE=TPU",
    "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport torch_xla\nimport torch_xla.core.xla_model as xm",
    '''class RBFRegressor(nn.Module):
    """Gaussian-kernel features on a fixed grid of centres plus a learned bandwidth."""

    def __init__(self, n_centres=24, width=0.15):
        super().__init__()
        self.n_centres = n_centres
        self.width = width
        self.log_sigma = nn.Parameter(torch.tensor(math.log(0.2)))
        self.mix = nn.Linear(2 * n_centres, 32)
        self.out = nn.Linear(32, 1)

    def forward(self, x):
        centres = torch.linspace(-2.0, 2.0, self.n_centres, device=x.device)
        d2 = (x - centres) ** 2
        sigma = self.log_sigma.exp()
        learned = torch.exp(-d2 / (2 * sigma ** 2))
        fixed = torch.exp(-d2 / (2 * self.width ** 2))
        feats = torch.cat([learned, fixed], dim=-1)
        feats = feats / (feats.sum(-1, keepdim=True) + 1e-6)
        return self.out(torch.tanh(self.mix(feats)))''',
    '''device = torch_xla.device()
torch.manual_seed(0)
x_train = torch.rand(256, 1) * 4 - 2
y_train = torch.sin(3 * x_train) + 0.1 * torch.randn_like(x_train)
model = RBFRegressor().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)''',
    '''for step in range(10):
    idx = torch.randint(0, 256, (64,))
    xb, yb = x_train[idx].to(device), y_train[idx].to(device)
    pred = model(xb)
    loss = F.smooth_l1_loss(pred, yb, beta=0.1)
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt)
    torch_xla.sync()
    if step % 3 == 0:
        print(step, round(loss.item(), 4), "sigma", round(model.log_sigma.exp().item(), 3))''',
    '''grid = torch.linspace(-2, 2, 50, device=device)[:, None]
with torch.no_grad():
    curve = model(grid).squeeze(-1)
    err = (curve - torch.sin(3 * grid.squeeze(-1))).abs().max()
print("max err", err.item())
curve_np = curve.cpu().numpy()
print(curve_np.dtype, curve_np[:3])''',
]
nb = nbformat.v4.new_notebook()
nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbformat.write(nb, "rbf_smoother.ipynb")
