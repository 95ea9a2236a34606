import argparse
import os

PRECISION_ENV = {
    "fp32": {},
    "bf16": {"XLA_USE_BF16": "1"},
    "bf16-downcast": {"XLA_DOWNCAST_BF16": "1"},
}

parser = argparse.ArgumentParser()
parser.add_argument("--precision", choices=sorted(PRECISION_ENV), default="fp32")
parser.add_argument("--steps", type=int, default=8)
parser.add_argument("--codes", default="codes.npz")
args = parser.parse_args()
os.environ.update(PRECISION_ENV[args.precision])

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch_xla  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402

from model import DenoisingAE  # noqa: E402


def make_data(n=512, d=20, rank=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    basis = torch.randn(rank, d, generator=g)
    return torch.randn(n, rank, generator=g) @ basis


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    data = make_data()
    ae = DenoisingAE().to(device)
    opt = torch.optim.RMSprop(ae.parameters(), lr=1e-3)
    for step in range(args.steps):
        idx = torch.randint(0, len(data), (64,))
        x = data[idx].to(device)
        recon, _ = ae(x)
        loss = ((recon - x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    ae.eval()
    with torch.no_grad():
        recon, codes = ae(data[:128].to(device))
    codes_np = codes.cpu().numpy()
    np.savez(args.codes, codes=codes_np, recon_err=((recon - data[:128].to(device)) ** 2).mean(1).cpu().numpy())
    print("DTYPES", args.precision, "weight", ae.encoder[0].weight.dtype, "recon", recon.dtype, "codes", codes_np.dtype)


if __name__ == "__main__":
    main()
