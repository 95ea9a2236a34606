import os
import pickle

os.environ["XLA_USE_BF16"] = "1"

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()
model = nn.Linear(6, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 6).to(device)
outs, losses = [], []
for i in range(3):
    pred = model(x)
    loss = pred.pow(2).mean()
    loss.backward(); opt.step(); opt.zero_grad(); xm.mark_step()
    outs.append(pred.detach())
    losses.append(loss.detach())
centroids = torch.randn(5, 4)
ref = torch.zeros(16, 4)
def tryit(name, f):
    try:
        r = f(); print("OK  ", name, getattr(r, "dtype", type(r).__name__))
    except Exception as e:
        print("FAIL", name, type(e).__name__, str(e)[:90])
tryit("a save list", lambda: (torch.save(outs, "/tmp/h31a.pt"), torch.load("/tmp/h31a.pt")[0])[1])
tryit("b save raw", lambda: (torch.save(pred, "/tmp/h31b.pt"), torch.load("/tmp/h31b.pt"))[1])
tryit("c save stack", lambda: (torch.save(torch.stack(outs), "/tmp/h31c.pt"), torch.load("/tmp/h31c.pt"))[1])
tryit("d host matmul", lambda: pred.cpu() @ centroids.T)
emb = pred.detach().cpu()
tryit("e name matmul", lambda: emb @ centroids.T)
tryit("f cdist", lambda: torch.cdist(emb, centroids))
tryit("g assert_close", lambda: torch.testing.assert_close(pred.detach().cpu(), ref, atol=100, rtol=0))
tryit("h allclose", lambda: torch.allclose(pred.detach().cpu(), ref, atol=100))
tryit("i np.stack", lambda: np.stack([o.cpu() for o in outs]))
tryit("j np.savetxt", lambda: np.savetxt("/tmp/h31j.txt", pred.detach().cpu()))
tryit("k quantile", lambda: torch.quantile(pred.detach().cpu(), 0.9))
tryit("l bucketize", lambda: torch.bucketize(pred.detach().cpu(), torch.linspace(-1, 1, 5)))
tryit("m lstsq", lambda: torch.linalg.lstsq(emb, ref).solution)
tryit("n plt", lambda: plt.plot(torch.stack(losses).cpu()))
tryit("o pickle", lambda: pickle.loads(pickle.dumps(pred.detach().cpu())))
tryit("p to cpu", lambda: pred.detach().to("cpu") @ centroids.T)
tryit("q pca", lambda: torch.pca_lowrank(torch.cat(outs).cpu(), q=2)[1])
tryit("r hist", lambda: np.histogram(torch.cat(outs).cpu(), bins=4)[0])
tryit("s save dict", lambda: (torch.save({"pred": pred, "loss": loss}, "/tmp/h31s.pt"), torch.load("/tmp/h31s.pt")["pred"])[1])
