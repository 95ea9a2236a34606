"""Multi-task tagger over padded sequences: a small attention encoder (padding masked with the dtype's lowest
value, ALiBi-style distance bias), returning class logits, a regression output and a pooled embedding. Losses are
summed on the device across steps; predicted scores are histogrammed and bucketed, read once at the end."""
import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


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


def downcast_floating(batch):
    """Cast `batch` as the legacy bf16 downcast environment switch held it on the device: float64
    tensors to float32, other floating tensors to torch.bfloat16; integer tensors and everything else
    as they are.

    Added by bf16-migrate (replacing the legacy bf16 downcast environment switch, under which a float32
    tensor on the XLA device was bf16 and a float64 one float32) where the code does not tell the
    dtype: `batch` is a tensor, or a list, tuple, namedtuple or dict of them, nested; containers are
    rebuilt, dicts as plain dicts.
    """
    if isinstance(batch, torch.Tensor):
        if batch.dtype == torch.float64:
            return batch.to(torch.float32)
        return batch.to(torch.bfloat16) if batch.is_floating_point() else batch
    if isinstance(batch, dict):
        return {key: downcast_floating(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(downcast_floating(value) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(downcast_floating(value) for value in batch)
    return batch


STEPS = int(os.environ.get("STEPS", 20))
L, D, NCLS, VOCAB = 16, 32, 3, 50
EDGES = torch.tensor([-1.0, -0.25, 0.0, 0.25, 1.0])


def alibi_bias(n, heads=2):
    slopes = torch.tensor([2 ** (-8 * (i + 1) / heads) for i in range(heads)])
    dist = (torch.arange(n)[None, :] - torch.arange(n)[:, None]).abs().float()
    return -slopes[:, None, None] * dist


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.qkv = nn.Linear(D, 3 * D)
        self.o = nn.Linear(D, D)
        self.register_buffer("bias", alibi_bias(L))
        self.cls = nn.Linear(D, NCLS)
        self.reg = nn.Linear(D, 1)

    def forward(self, tok, pad):
        h = self.emb(tok)
        b, n, _ = h.shape
        q, k, v = self.qkv(h).view(b, n, 3, 2, D // 2).permute(2, 0, 3, 1, 4)
        att = q @ k.transpose(-1, -2) / (D // 2) ** 0.5 + self.bias
        att = att.masked_fill(pad[:, None, None, :], -1e9)
        h = h + self.o((att.softmax(-1) @ v).transpose(1, 2).reshape(b, n, D))
        keep = (~pad).unsqueeze(-1).to(h.dtype)
        pooled = (h * keep).sum(1) / keep.sum(1)
        return self.cls(pooled), self.reg(pooled).squeeze(-1), F.normalize(pooled, dim=-1)


def batch(g, n=12):
    tok = torch.randint(1, VOCAB, (n, L), generator=g)
    lens = torch.randint(4, L + 1, (n,), generator=g)
    pad = torch.arange(L)[None, :] >= lens[:, None]
    tok = tok.masked_fill(pad, 0)
    y = (tok.float().mean(1) // 10).long().clamp(0, NCLS - 1)
    r = lens.float() / L - 0.5
    return tok, pad, y, r


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = Encoder().to(dev)
    model.to(torch.bfloat16)
    model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    edges = EDGES.to(dev, dtype=torch.bfloat16)
    loss_sum = torch.zeros((), device=dev, dtype=torch.float32)
    hist = torch.zeros(10, device=dev, dtype=torch.bfloat16)
    bucket_counts = torch.zeros(len(EDGES) + 1, device=dev, dtype=torch.bfloat16)
    g = torch.Generator().manual_seed(2)
    for step in range(STEPS):
        tok, pad, y, r = (downcast_floating(t.to(dev)) for t in batch(g))
        logits, reg, emb = model(tok, pad)
        loss = F.cross_entropy(logits, downcast_floating(y)) + 0.5 * F.mse_loss(reg, downcast_floating(r)) + 0.01 * (emb @ emb.T).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss_sum += loss.detach()
        hist += torch.histc(reg.detach(), bins=10, min=-1.0, max=1.0)
        bucket_counts += torch.bincount(torch.bucketize(reg.detach(), edges), minlength=len(EDGES) + 1).to(torch.bfloat16)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    print(f"mean loss {(loss_sum / STEPS).item():.4f}")
    print(f"hist {hist.cpu().tolist()}")
    print(f"buckets {bucket_counts.cpu().tolist()} median-reg {torch.quantile(reg.detach().float(), 0.5).item():.4f}")


if __name__ == "__main__":
    main()
