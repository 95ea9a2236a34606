"""Offline embedding dump: encode a corpus in batches on the accelerator, whiten with a running mean kept on the
device, score against class prototypes, and write everything to files. Nothing but the file names is printed."""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self, d_in=40, hid=64, d_out=16):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d_in, hid), nn.Tanh(), nn.Linear(hid, d_out))

    def forward(self, x):
        return self.body(x)


def load_encoder(path):
    enc = Encoder()
    if os.path.exists(path):
        enc.load_state_dict(torch.load(path, map_location="cpu"))
    else:
        torch.manual_seed(0)
    return enc


def main(out_dir):
    import torch_xla

    os.makedirs(out_dir, exist_ok=True)
    dev = torch_xla.device()
    enc = load_encoder(os.path.join(out_dir, "encoder.pt")).to(dev).eval()
    g = torch.Generator().manual_seed(3)
    corpus = torch.randn(int(os.environ.get("N_ROWS", "320")), 40, generator=g)
    prototypes = F.normalize(torch.randn(5, 16, generator=g), dim=-1).to(dev)

    mean = torch.zeros(16, device=dev)
    seen = 0
    rows, labels, margins = [], [], []
    with torch.no_grad():
        for start in range(0, corpus.shape[0], 64):
            xb = corpus[start:start + 64].to(dev)
            z = enc(xb)
            seen += z.shape[0]
            mean += (z.sum(0) - z.shape[0] * mean) / seen
            zc = F.normalize(z - mean, dim=-1)
            scores = zc @ prototypes.T
            top2 = scores.topk(2, dim=-1)
            rows.append(zc.cpu())
            labels.append(top2.indices[:, 0].cpu())
            margins.append((top2.values[:, 0] - top2.values[:, 1]).cpu())
            torch_xla.sync()

    emb = torch.cat(rows)
    np.save(os.path.join(out_dir, "embeddings.npy"), emb.numpy())
    torch.save({"labels": torch.cat(labels), "margins": torch.cat(margins), "mean": mean.cpu()},
               os.path.join(out_dir, "scores.pt"))
    print("wrote", os.path.join(out_dir, "embeddings.npy"), os.path.join(out_dir, "scores.pt"))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/hunt42_dump")
