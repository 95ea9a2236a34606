"""Fine-tune a small attention classifier with LoRA adapters on q/v; export the merged weights."""
import os
os.environ["XLA_USE_BF16"] = "1"
os.environ["PJRT_DEVICE"] = os.environ.get("PJRT_DEVICE", "TPU")

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from lora import inject_lora, lora_state_dict, merge_lora


class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.o_proj = nn.Linear(d, d)

    def forward(self, x):
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        att = (q @ k.transpose(1, 2) / q.shape[-1] ** 0.5).softmax(-1)
        return self.o_proj(att @ v)


class Classifier(nn.Module):
    def __init__(self, vocab=50, d=32, n_cls=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.attn = Attn(d)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, n_cls)

    def forward(self, tok):
        h = self.emb(tok)
        h = self.norm(h + self.attn(h))
        return self.head(h.mean(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", 20)))
    p.add_argument("--out", default="/tmp/hunt52_lora")
    args = p.parse_args()
    torch.manual_seed(0)
    dev = xm.xla_device()

    model = Classifier().to(dev)
    # "pretrained": freeze everything except the head, then add adapters
    model.requires_grad_(False)
    model.head.requires_grad_(True)
    inject_lora(model, r=4, alpha=8.0)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=3e-3)
    print("trainable", sum(p.numel() for p in trainable))

    g = torch.Generator().manual_seed(1)
    tok = torch.randint(0, 50, (64, 12), generator=g)
    lab = (tok[:, 0] % 4)
    for step in range(args.steps):
        idx = torch.randint(0, 64, (16,), generator=g)
        x, y = tok[idx].to(dev), lab[idx].to(dev)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")

    os.makedirs(args.out, exist_ok=True)
    torch.save(lora_state_dict(model), os.path.join(args.out, "adapter.pt"))
    merge_lora(model)
    with torch.no_grad():
        acc = (model(tok.to(dev)).argmax(-1) == lab.to(dev)).float().mean()
    xm.save(model.state_dict(), os.path.join(args.out, "merged.pt"))
    sd = torch.load(os.path.join(args.out, "merged.pt"))
    print("DTYPES", model.attn.q_proj.weight.dtype, sd["attn.q_proj.weight"].dtype,
          torch.load(os.path.join(args.out, "adapter.pt"))["attn.q_proj.lora_A"].dtype)
    print(f"merged acc {acc.item():.3f}")


if __name__ == "__main__":
    main()
