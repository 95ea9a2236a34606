"""Embedding extraction: encode a synthetic corpus, L2-normalise, fill a host buffer, save stats + .npy."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

N, D_IN, D = 300, 24, 16
BS = 64


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(D_IN, 64), nn.SiLU(), nn.Linear(64, D))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


def main():
    device = torch_xla.device()
    torch.manual_seed(0)
    corpus = np.random.default_rng(0).normal(size=(N, D_IN))  # float64
    enc = Encoder().to(device).eval()

    buf = torch.empty(N, D)
    norms = torch.empty(N)
    with torch.no_grad():
        for i in range(0, N, BS):
            j = min(i + BS, N)
            x = torch.from_numpy(corpus[i:j]).to(device)
            x = x.float()
            emb = enc(x)
            xm.mark_step()
            buf[i:j] = emb.cpu()
            norms[i:j] = emb.norm(dim=-1).cpu()

    np.save("embeddings.npy", buf.numpy())

    # similarity statistics on the device
    e = buf.to(device)
    sims = e @ e.T
    off = sims[~torch.eye(N, dtype=torch.bool, device=device)]
    q = torch.quantile(off.float(), torch.tensor([0.05, 0.5, 0.95], device=device))
    med = off.median()
    hist = torch.histc(off.float(), bins=10, min=-1.0, max=1.0)
    nn_sim, nn_idx = sims.fill_diagonal_(-2.0).max(dim=1)
    torch_xla.sync()
    stats = {
        "q05_q50_q95": q.cpu().numpy().round(3).tolist(),
        "median": med.item(),
        "hist": hist.cpu().numpy().astype(int).tolist(),
        "mean_nn": nn_sim.mean().item(),
        "norm_dev": (norms - 1).abs().max().item(),
    }
    print(stats)
    np.save("nn_idx.npy", nn_idx.cpu().numpy())


if __name__ == "__main__":
    main()
