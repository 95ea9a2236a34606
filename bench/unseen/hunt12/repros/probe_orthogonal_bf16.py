"""Probe for G5 (not a repro of the tool): where does the bf16 orthogonal parametrization go NaN?
The parametrized weight of a bf16 Linear(32, 32) on the XLA device vs on the CPU, forward and after
hand SGD updates of `original` (as orth_rnn.py does)."""
import sys

import torch
import torch.nn as nn
from torch.nn.utils import parametrizations
import torch_xla
import torch_xla.core.xla_model as xm


def check(device, dtype, label):
    torch.manual_seed(0)
    lin = parametrizations.orthogonal(nn.Linear(32, 32, bias=False)).to(device).to(dtype)
    W = lin.weight
    eye = torch.eye(32, dtype=torch.float64)
    Wc = W.detach().cpu().double()
    print(f"{label}: weight finite {bool(torch.isfinite(Wc).all())}, |W^T W - I|max {float((Wc.T @ Wc - eye).abs().max()):.3g}")
    params = list(lin.parameters())
    for step in range(5):
        x = torch.randn(8, 32).to(device=device, dtype=dtype)
        loss = lin(x).pow(2).mean()
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.data -= 0.05 * g
        if device != "cpu":
            xm.mark_step()
    Wc = lin.weight.detach().cpu().double()
    print(f"{label}: after 5 updates finite {bool(torch.isfinite(Wc).all())}, |W^T W - I|max {float((Wc.T @ Wc - eye).abs().max()):.3g}")


check(torch_xla.device(), torch.float32, "XLA f32 (IR bf16 under the switch)")
check(torch_xla.device(), torch.bfloat16, "XLA bf16")
check("cpu", torch.bfloat16, "CPU bf16")
