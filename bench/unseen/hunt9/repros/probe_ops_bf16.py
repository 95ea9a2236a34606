import os, sys, traceback
import torch, torch.nn as nn, torch.nn.functional as F
import torch_xla.core.xla_model as xm
dev = xm.xla_device()
bf = os.environ.get("XLA_USE_BF16") or os.environ.get("XLA_DOWNCAST_BF16")
dt = torch.float32 if bf else torch.bfloat16
print("switch", {k: os.environ.get(k) for k in ("XLA_USE_BF16", "XLA_DOWNCAST_BF16")}, "dtype used", dt)
def t(name, fn):
    try:
        r = fn(); xm.mark_step()
        if isinstance(r, torch.Tensor):
            print(name, "->", r.dtype, r.cpu().flatten()[:3].tolist())
        else:
            print(name, "->", r)
    except Exception as e:
        print(name, "RAISES", type(e).__name__, str(e).splitlines()[0][:200])
x = torch.randn(4, 16, device=dev, dtype=dt)
t("rfft", lambda: torch.fft.rfft(x, dim=-1).abs())
t("rfft.double", lambda: torch.fft.rfft(x.double(), dim=-1).abs())
t("stft", lambda: torch.stft(x.reshape(-1), 8, return_complex=True, window=torch.hann_window(8, device=dev, dtype=dt)).abs())
t("logcumsumexp", lambda: torch.logcumsumexp(x, dim=-1))
t("sort", lambda: torch.sort(x, dim=-1, descending=True)[0])
t("topk", lambda: torch.topk(x, 3, dim=-1)[0])
t("cumsum", lambda: torch.cumsum(x, dim=-1))
m = nn.Transformer.generate_square_subsequent_mask(5, device=dev)
print("gen mask dtype", m.dtype)
mha = nn.MultiheadAttention(16, 2, batch_first=True).to(dev)
if not bf: mha = mha.to(torch.bfloat16)
q = torch.randn(2, 5, 16, device=dev, dtype=dt)
kpm = torch.zeros(2, 5, dtype=torch.bool, device=dev); kpm[:, -1] = True
t("mha f32 mask + kpm", lambda: mha(q, q, q, attn_mask=m, key_padding_mask=kpm, need_weights=False)[0])
t("mha f32 mask", lambda: mha(q, q, q, attn_mask=m, need_weights=False)[0])
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0), 1).to(dev)
if not bf: enc = enc.to(torch.bfloat16)
t("encoder f32 mask + kpm", lambda: enc(q, mask=m, src_key_padding_mask=kpm))
lstm = nn.LSTM(16, 8, batch_first=True).to(dev)
if not bf: lstm = lstm.to(torch.bfloat16)
def packed():
    p = nn.utils.rnn.pack_padded_sequence(q, torch.tensor([5, 3]), batch_first=True, enforce_sorted=False)
    o, (h, c) = lstm(p)
    o, l = nn.utils.rnn.pad_packed_sequence(o, batch_first=True)
    return h
t("lstm packed", packed)
from torch.distributions import Normal
t("normal rsample logprob", lambda: Normal(x, torch.ones_like(x)).log_prob(Normal(x, x.exp()).rsample()))
t("interp", lambda: F.interpolate(x.view(1, 1, 4, 16), scale_factor=2, mode="bilinear", align_corners=False))
la = torch.zeros(1, requires_grad=True, device=dev)
print("leaf zeros dtype", la.dtype)
t("cdist", lambda: torch.cdist(x, x))
