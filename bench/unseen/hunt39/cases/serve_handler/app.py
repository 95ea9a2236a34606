"""A small scoring service: the model is built and loaded when the module is
imported, and each request runs one forward pass on the XLA device.

The HTTP layer is a minimal stand-in for Flask (route decorator + JSON bodies)
so the handler code is the same as in production."""
import json
import os

import torch
import torch.nn as nn
import torch_xla

DEV = torch_xla.device()
CKPT = os.environ.get("CKPT", "scorer.pt")
ROUTES = {}


def route(path):
    def deco(fn):
        ROUTES[path] = fn
        return fn
    return deco


class Scorer(nn.Module):
    def __init__(self, n_feat=20, n_cls=4):
        super().__init__()
        self.norm = nn.LayerNorm(n_feat)
        self.body = nn.Sequential(nn.Linear(n_feat, 64), nn.SiLU(), nn.Linear(64, 64), nn.SiLU())
        self.cls = nn.Linear(64, n_cls)
        self.register_buffer("temperature", torch.tensor(1.5))

    def forward(self, x):
        return self.cls(self.body(self.norm(x))) / self.temperature


def load_model():
    torch.manual_seed(1)
    m = Scorer()
    if os.path.exists(CKPT):
        m.load_state_dict(torch.load(CKPT, map_location="cpu"))
    else:
        torch.save(m.state_dict(), CKPT)
    return m.to(DEV).eval()


MODEL = load_model()


@route("/predict")
def predict(payload):
    feats = torch.tensor(payload["features"], device=DEV)
    with torch.no_grad():
        logits = MODEL(feats)
        probs = logits.softmax(dim=-1)
        top = probs.argmax(dim=-1)
    return {"probs": probs.tolist(), "label": top.tolist(), "max_logit": logits.max().item()}


@route("/embed")
def embed(payload):
    x = torch.as_tensor(payload["features"], dtype=torch.float32).to(DEV)
    with torch.no_grad():
        h = MODEL.body(MODEL.norm(x))
    return {"embedding": h.cpu().numpy().round(5).tolist()}


def handle(path, body):
    return json.dumps(ROUTES[path](json.loads(body)))


if __name__ == "__main__":
    n = int(os.environ.get("STEPS", "10"))
    g = torch.Generator().manual_seed(7)
    for i in range(n):
        feats = torch.randn(3, 20, generator=g).tolist()
        out = json.loads(handle("/predict", json.dumps({"features": feats})))
        torch_xla.sync()
        print(f"req {i} max_logit {out['max_logit']:.5f} p0 {out['probs'][0][0]:.5f}")
    emb = json.loads(handle("/embed", json.dumps({"features": feats})))
    print("emb", emb["embedding"][0][:3])
    print("DTYPES", next(MODEL.parameters()).dtype, MODEL.temperature.dtype, type(out["probs"][0][0]).__name__)
