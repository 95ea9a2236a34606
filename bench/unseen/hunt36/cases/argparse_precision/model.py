import torch
import torch.nn as nn


class DenoisingAE(nn.Module):
    """MLP autoencoder; adds Gaussian input noise while training."""

    def __init__(self, d=20, code=6, noise_std=0.1):
        super().__init__()
        self.noise_std = noise_std
        self.encoder = nn.Sequential(nn.Linear(d, 32), nn.Tanh(), nn.Linear(32, code))
        self.decoder = nn.Sequential(nn.Linear(code, 32), nn.Tanh(), nn.Linear(32, d))

    def forward(self, x):
        if self.training:
            x = x + self.noise_std * torch.randn(x.shape, device=x.device)
        z = self.encoder(x)
        return self.decoder(z), z
