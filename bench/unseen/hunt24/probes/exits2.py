import os
import pickle

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

device = torch_xla.device()
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(device)
x = torch.randn(32, 8).to(device)


def check(name, fn):
    try:
        r = fn()
        print(name, "ok", getattr(r, "dtype", type(r)))
    except Exception as e:
        print(name, "ERROR", type(e).__name__, str(e)[:80])


with torch.no_grad():
    emb = model(x)
check("k to_kw", lambda: emb.to(device="cpu").numpy())
check("l data", lambda: emb.data.cpu().numpy())
check("m cpu_data", lambda: emb.cpu().data.numpy())
check("n clone", lambda: emb.clone().detach().cpu().numpy())
check("o nonblocking", lambda: emb.to("cpu", non_blocking=True).numpy())
check("p pickle", lambda: pickle.loads(pickle.dumps(emb.cpu())).numpy())
check("q force_detach", lambda: emb.detach().numpy(force=True))
check("r cpu_method_ref", lambda: list(map(torch.Tensor.cpu, emb.split(16)))[0].numpy())
check("s type", lambda: emb.cpu().type(torch.FloatTensor).numpy())
check("t copy_into", lambda: torch.empty(32, 4).copy_(emb).numpy())
check("u from_dlpack_np", lambda: emb.cpu().numpy())
check("v tensor_cpu_fn", lambda: torch.Tensor.cpu(emb).numpy())
