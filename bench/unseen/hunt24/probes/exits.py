import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

if not hasattr(xm, "all_gather"):  # the CPU stub has none
    xm.all_gather = lambda t, dim=0: t

device = torch_xla.device()
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8).to(device), torch.randint(0, 4, (32,)).to(device)
loss = nn.functional.cross_entropy(model(x), y)
loss.backward()
opt.step()


def check(name, fn):
    try:
        r = fn()
        print(name, "ok", getattr(r, "dtype", type(r)))
    except Exception as e:
        print(name, "ERROR", type(e).__name__, str(e)[:80])


model.eval()
with torch.inference_mode():
    logits = model(x)
    probs = logits.softmax(-1)
gathered = xm.all_gather(probs)
check("a all_gather", lambda: gathered.cpu().numpy())
check("b asarray", lambda: np.asarray(probs.cpu()))
check("c to_cpu", lambda: probs.to("cpu").numpy())
check("d topk", lambda: torch.topk(probs, 3).values.cpu().numpy())
check("e split", lambda: [p.cpu().numpy() for p in probs.split(8)][0])
check("f force", lambda: probs.numpy(force=True))
chunks = []
for i in range(0, 32, 8):
    chunks.append(probs[i:i + 8].detach().cpu())
check("g cat_list", lambda: torch.cat(chunks).numpy())
top_p, top_i = probs.topk(2, dim=-1)
check("h topk_tuple", lambda: top_p.cpu().numpy())
host = probs.to(torch.device("cpu"))
check("i to_device_cpu", lambda: host.numpy())
check("j mesh_reduce", lambda: xm.mesh_reduce("p", probs.cpu().numpy(), np.concatenate))
