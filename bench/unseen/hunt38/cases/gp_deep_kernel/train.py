"""Deep kernel learning: an MLP feature map under an RBF kernel, trained by the exact GP marginal likelihood
on mini-batches (a 1-D regression with heteroscedastic noise)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
from torch.distributions import MultivariateNormal


class FeatureMap(nn.Module):
    def __init__(self, d_in=3, width=32, d_out=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(),
                                 nn.Linear(width, d_out))

    def forward(self, x):
        return self.net(x)


class DeepKernelGP(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = FeatureMap()
        self.raw_lengthscale = nn.Parameter(torch.zeros(4))
        self.raw_outputscale = nn.Parameter(torch.tensor(0.0))
        self.raw_noise = nn.Parameter(torch.tensor(-2.0))
        self.mean_const = nn.Parameter(torch.tensor(0.0))

    def kernel(self, a, b):
        ls = F.softplus(self.raw_lengthscale) + 1e-3
        a, b = a / ls, b / ls
        sq = (a.unsqueeze(1) - b.unsqueeze(0)).pow(2).sum(-1)
        return F.softplus(self.raw_outputscale) * torch.exp(-0.5 * sq)

    def forward(self, x):
        z = self.features(x)
        n = z.shape[0]
        K = self.kernel(z, z)
        K = K + (F.softplus(self.raw_noise) + 1e-2) * torch.eye(n, device=x.device)
        mean = self.mean_const.expand(n)
        return MultivariateNormal(mean, covariance_matrix=K)


def make_data(n, gen):
    x = torch.rand(n, 3, generator=gen) * 4 - 2
    f = torch.sin(2 * x[:, 0]) + 0.5 * x[:, 1] * x[:, 2]
    y = f + (0.05 + 0.1 * x[:, 0].abs()) * torch.randn(n, generator=gen)
    return x, y


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(3)
    device = torch_xla.device()
    model = DeepKernelGP().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x_all, y_all = make_data(512, gen)
    batch = 48
    for step in range(int(__import__("os").environ.get("STEPS", "12"))):
        idx = torch.randperm(512, generator=gen)[:batch]
        x = x_all[idx].to(device)
        y = y_all[idx].to(device)
        dist = model(x)
        loss = -dist.log_prob(y) / batch
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} nll {loss.item():.4f} noise {F.softplus(model.raw_noise).item():.4f}", flush=True)
    print("DTYPES", "lengthscale", model.raw_lengthscale.dtype, "loss", loss.dtype)


if __name__ == "__main__":
    main()
