"""Prefix tuning of a frozen tiny LM on a copy task; only the prefix encoder trains."""
import os
import sys

import torch
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from model import PrefixEncoder, TinyLM


def main(steps):
    torch.manual_seed(0)
    dev = xm.xla_device()
    lm = TinyLM().to(dev)
    for p in lm.parameters():
        p.requires_grad = False
    lm.eval()
    cfg = lm.cfg
    prefix_enc = PrefixEncoder(cfg["n_layer"], cfg["n_head"], cfg["d"] // cfg["n_head"]).to(dev)
    opt = torch.optim.AdamW(prefix_enc.parameters(), lr=5e-3)

    g = torch.Generator().manual_seed(4)
    for step in range(steps):
        half = torch.randint(1, 40, (8, 6), generator=g)
        seq = torch.cat([half, half], 1).to(dev)
        logits = lm(seq[:, :-1], prefixes=prefix_enc(seq.shape[0]))
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), seq[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")

    with torch.no_grad():
        pre = prefix_enc(1)
        k0 = pre[0][0].cpu()
    torch.save(prefix_enc.state_dict(), "/tmp/hunt52_prefix.pt")
    sd = torch.load("/tmp/hunt52_prefix.pt")
    print("DTYPES", next(lm.parameters()).dtype, next(prefix_enc.parameters()).dtype, k0.dtype, sd["emb"].dtype)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ.get("STEPS", 20)))
