"""A small VQ autoencoder on synthetic signals. The codebook is not a parameter: it is a device tensor outside the
model, learnt by an exponential moving average of the encoder outputs assigned to each code (k-means style), with
dead codes re-seeded from the batch."""
import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


def floating_to_bf16(batch):
    """Cast the floating-point tensors in `batch` to torch.bfloat16, leaving integer tensors
    (token ids, labels) and everything else as they are.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor on the XLA device was bf16): `batch` is a tensor, or a list, tuple,
    namedtuple or dict of them, nested; containers are rebuilt, dicts as plain dicts.
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(torch.bfloat16) if batch.is_floating_point() else batch
    if isinstance(batch, dict):
        return {key: floating_to_bf16(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(floating_to_bf16(value) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(floating_to_bf16(value) for value in batch)
    return batch


def bf16_inputs_hook(module, args, kwargs):
    """Forward pre-hook added by bf16-migrate: the model's floating inputs become bf16."""
    return floating_to_bf16(args), floating_to_bf16(kwargs)


STEPS = int(os.environ.get("STEPS", "20"))
K, D = 16, 8


class AE(nn.Module):
    def __init__(self, n=32, hid=48):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(n, hid), nn.ReLU(), nn.Linear(hid, D))
        self.dec = nn.Sequential(nn.Linear(D, hid), nn.ReLU(), nn.Linear(hid, n))


def quantize(z, codebook):
    dist = (z * z).sum(1, keepdim=True) - 2 * z @ codebook.T + (codebook * codebook).sum(1)
    idx = dist.argmin(1)
    return codebook[idx], idx


def main():
    dev = torch_xla.device()
    torch.manual_seed(0)
    t = torch.linspace(0, 1, 32)
    freqs = torch.rand(512, 1) * 6 + 1
    signals = torch.sin(2 * np.pi * freqs * t) + 0.05 * torch.randn(512, 32)

    model = AE().to(dev)
    model.to(torch.bfloat16)
    model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)

    codebook = torch.randn(K, D, device=dev) * 0.1
    cluster_size = torch.zeros(K, device=dev)
    embed_sum = codebook.clone()
    decay, beta = 0.95, 0.25

    for step in range(STEPS):
        x = signals[step * 16 % 512:(step * 16 % 512) + 16].to(dev, dtype=torch.bfloat16)
        z = model.enc(x.to(torch.bfloat16))
        zq, idx = quantize(z, codebook)
        recon = model.dec((z + (zq - z).detach()).to(torch.bfloat16))
        loss = F.mse_loss(recon, x) + beta * F.mse_loss(z, zq.detach())
        opt.zero_grad()
        loss.backward()
        opt.step()

        with torch.no_grad():
            onehot = F.one_hot(idx, K).type(z.dtype)
            cluster_size.mul_(decay).add_(onehot.sum(0), alpha=1 - decay)
            embed_sum.mul_(decay).add_(onehot.T @ z.detach(), alpha=1 - decay)
            n = cluster_size.sum()
            smoothed = (cluster_size + 1e-5) / (n + K * 1e-5) * n
            codebook.copy_(embed_sum / smoothed.unsqueeze(1))
            dead = (cluster_size < 1e-3).unsqueeze(1)
            codebook.copy_(torch.where(dead, z.detach()[:K], codebook))
        torch_xla.sync()
        usage = torch.bincount(idx.cpu(), minlength=K).numpy()
        print(f"step {step} loss {loss.item():.5f} used {(usage > 0).sum()}/{K}")

    print("DTYPES", model.enc[0].weight.dtype, codebook.dtype, cluster_size.dtype)
    np.save(os.environ.get("VQ_OUT", "/tmp/hunt42_codebook.npy"), codebook.cpu().float().numpy())


if __name__ == "__main__":
    main()
