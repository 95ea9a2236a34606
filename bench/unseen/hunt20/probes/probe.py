import os
os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


def dump(t, path):
    np.save(path, t.cpu().numpy())


def to_host(t):
    return t.detach().cpu()


device = torch_xla.device()
model = nn.Linear(8, 4).to(device)
x = torch.randn(16, 8).to(device)
with torch.no_grad():
    out = model(x)
    probs = F.softmax(out, -1)
    dump(probs, "a.npy")
    print("1 helper ok")
    h = to_host(probs)
    print("2", h.numpy().dtype)
    embs = [model(x[i:i + 4]) for i in range(0, 16, 4)]
    host = [e.cpu() for e in embs]
    print("3", np.stack([e.numpy() for e in host]).dtype)
    arr = np.empty((16, 4), np.float32)
    arr[0:16] = np.asarray(out.cpu())
    print("4 asarray ok")
    np.savetxt("p.txt", probs.to("cpu"))
    print("5 savetxt ok")
    r = out.cpu().detach().numpy()
    print("6", r.dtype)
    pair = (out.cpu(), probs.cpu())
    print("7", pair[1].numpy().dtype)
    onehot = F.one_hot(out.argmax(-1), 4).float()
    back = onehot @ model.weight
    print("8", back.shape)
    q = torch.quantile(out, 0.9)
    print("9", q.item())
