"""Data-parallel training launched with torch_xla.launch; rank 0 saves; warm-starts from init.pt when present.

Each process builds the model, optionally loads the warm-start weights (saved earlier by xm.save, so float32 on
disk), trains on its shard through MpDeviceLoader, reduces the validation loss across replicas with xm.all_reduce and
xm.mesh_reduce, and rank 0 writes the final checkpoint with xm.save.
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
import torch_xla.runtime as xr
from torch.utils.data import DataLoader, TensorDataset

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=6)
ap.add_argument("--init", default="/tmp/mp_resume_init.pt")
ap.add_argument("--out", default="/tmp/mp_resume_final.pt")
args = ap.parse_args()


class Tagger(nn.Module):
    def __init__(self, vocab=64, dim=32, tags=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.enc = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=64, batch_first=True, dropout=0.0)
        self.out = nn.Linear(dim, tags)

    def forward(self, tok):
        return self.out(self.enc(self.emb(tok)))


def make_data(seed, n=96, t=10):
    g = torch.Generator().manual_seed(seed)
    tok = torch.randint(0, 64, (n, t), generator=g)
    tags = tok % 5
    return TensorDataset(tok, tags)


def _mp_fn(index, steps, init, out):
    device = torch_xla.device()
    torch.manual_seed(0)
    model = Tagger()
    if os.path.exists(init):
        model.load_state_dict(torch.load(init))
        xm.master_print("warm start from", init)
    model = model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    train = DataLoader(make_data(index), batch_size=8)
    loader = pl.MpDeviceLoader(train, device)
    lossf = nn.CrossEntropyLoss()
    for step, (tok, tags) in enumerate(loader):
        if step >= steps:
            break
        opt.zero_grad()
        logits = model(tok)
        loss = lossf(logits.reshape(-1, 5), tags.reshape(-1))
        loss.backward()
        xm.optimizer_step(opt)
        xm.master_print(f"step {step} loss {loss.item():.5f}")

    model.eval()
    val = make_data(100 + index)
    with torch.no_grad():
        tok, tags = val.tensors[0].to(device), val.tensors[1].to(device)
        vloss = lossf(model(tok).reshape(-1, 5), tags.reshape(-1))
        vsum = xm.all_reduce(xm.REDUCE_SUM, vloss) / xr.world_size()
        vmean = xm.mesh_reduce("val_loss", vloss.item(), np.mean)
    xm.master_print("val loss", vsum)
    xm.master_print("DTYPES", next(model.parameters()).dtype, vsum.dtype, "mesh", type(vmean).__name__)
    xm.save(model.state_dict(), out)
    if xm.is_master_ordinal():
        saved = torch.load(out)
        print("SAVED", saved["out.weight"].dtype, "val", round(float(vmean), 4))
        if not os.path.exists(init):
            torch.save(saved, init)


if __name__ == "__main__":
    torch_xla.launch(_mp_fn, args=(args.steps, args.init, args.out))
