import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class SpecNet(nn.Module):
    def __init__(self, n_fft=64):
        super().__init__()
        self.n_fft = n_fft
        self.register_buffer("window", torch.hann_window(n_fft))
        self.fc = nn.Linear(n_fft // 2 + 1, 3)

    def forward(self, wave):
        spec = wave.stft(self.n_fft, hop_length=self.n_fft // 2, window=self.window, return_complex=True).abs()
        return self.fc(torch.log1p(spec).mean(-1))


device = xm.xla_device()
torch.manual_seed(0)
model = SpecNet().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(12):
    wave, y = torch.randn(8, 1024).to(device), torch.randint(0, 3, (8,)).to(device)
    loss = F.cross_entropy(model(wave), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"{loss.item():.4f}")
