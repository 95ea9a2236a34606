"""LoRA fine-tuning of a small pretrained classifier: the base stays frozen, only the adapters train.

The "pretrained" weights come from a CPU checkpoint (made here the first time). After training the
adapters are merged into the base weights and the merged state dict is written for serving.
"""
import argparse
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

BASE_CKPT = "base_cls.pt"


class LoRALinear(nn.Module):
    def __init__(self, d_in, d_out, rank, alpha=8.0):
        super().__init__()
        self.base = nn.Linear(d_in, d_out)
        self.lora_a = nn.Parameter(torch.empty(rank, d_in))
        self.lora_b = nn.Parameter(torch.zeros(d_out, rank))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
        self.scale = alpha / rank

    def forward(self, x):
        return self.base(x) + (x @ self.lora_a.t() @ self.lora_b.t()) * self.scale

    @torch.no_grad()
    def merged_weight(self):
        return self.base.weight + (self.lora_b @ self.lora_a) * self.scale


class Classifier(nn.Module):
    def __init__(self, d_in=32, hidden=64, n_cls=5, rank=4):
        super().__init__()
        self.fc1 = LoRALinear(d_in, hidden, rank)
        self.fc2 = LoRALinear(hidden, hidden, rank)
        self.head = nn.Linear(hidden, n_cls)

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        h = F.gelu(self.fc2(h))
        return self.head(h)


def make_base_checkpoint(path, rank):
    torch.manual_seed(123)
    m = Classifier(rank=rank)
    torch.save({k: v for k, v in m.state_dict().items() if "lora" not in k}, path)


def task_data(n, seed):
    g = np.random.default_rng(seed)
    x = g.normal(size=(n, 32)).astype(np.float32)
    w = g.normal(size=(32, 5)).astype(np.float32)
    y = (x @ w + 0.3 * g.normal(size=(n, 5))).argmax(1)
    return torch.from_numpy(x), torch.from_numpy(y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--rank", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()

    if not os.path.exists(BASE_CKPT):
        make_base_checkpoint(BASE_CKPT, args.rank)
    device = xm.xla_device()
    torch.manual_seed(0)
    model = Classifier(rank=args.rank)
    missing, _ = model.load_state_dict(torch.load(BASE_CKPT, map_location="cpu"), strict=False)
    assert all("lora" in k for k in missing)
    for name, p in model.named_parameters():
        p.requires_grad = "lora" in name or name.startswith("head.")
    model = model.to(device)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=3e-3, weight_decay=0.0)
    n_train = sum(p.numel() for p in trainable)
    print(f"trainable params: {n_train}")

    x_all, y_all = task_data(2048, seed=7)
    x_val, y_val = task_data(512, seed=8)
    for step in range(args.steps):
        idx = torch.randint(0, x_all.shape[0], (args.batch,))
        xb, yb = x_all[idx].to(device), y_all[idx].to(device)
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")

    model.eval()
    with torch.no_grad():
        logits = model(x_val.to(device))
        acc = (logits.argmax(1).cpu() == y_val).float().mean().item()
        drift = (model.fc1.merged_weight() - model.fc1.base.weight).abs().max()
    print(f"val acc {acc:.4f} adapter drift {drift.item():.5f}")

    merged = {}
    for name in ("fc1", "fc2"):
        layer = getattr(model, name)
        merged[f"{name}.weight"] = layer.merged_weight().cpu()
        merged[f"{name}.bias"] = layer.base.bias.detach().cpu()
    merged.update({k: v.detach().cpu() for k, v in model.head.state_dict().items()})
    torch.save(merged, "merged_cls.pt")
    with open("lora_summary.json", "w") as f:
        json.dump({"val_acc": acc, "dtypes": sorted({str(v.dtype) for v in merged.values()}),
                   "fc1_w_mean": float(merged["fc1.weight"].double().mean())}, f)


if __name__ == "__main__":
    main()
