"""Token-level top-2 mixture of experts on a toy next-token task, with a Switch-style balance loss."""
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class TopKMoE(nn.Module):
    def __init__(self, d, n_experts, k=2, hidden=64):
        super().__init__()
        self.k, self.n = k, n_experts
        self.router = nn.Linear(d, n_experts, bias=False)
        self.w_in = nn.Parameter(torch.randn(n_experts, d, hidden) * d ** -0.5)
        self.w_out = nn.Parameter(torch.randn(n_experts, hidden, d) * hidden ** -0.5)

    def forward(self, x):
        tokens = x.reshape(-1, x.shape[-1])
        probs = F.softmax(self.router(tokens), dim=-1)
        gate, expert = probs.topk(self.k, dim=-1)
        gate = gate / gate.sum(-1, keepdim=True)
        out = torch.zeros_like(tokens)
        for slot in range(self.k):
            e = expert[:, slot]
            h = F.gelu(torch.bmm(tokens.unsqueeze(1), self.w_in[e]))
            y = torch.bmm(h, self.w_out[e]).squeeze(1)
            out.index_add_(0, torch.arange(tokens.shape[0], device=x.device), y * gate[:, slot:slot + 1])
        load = torch.zeros(self.n, device=x.device).scatter_add_(
            0, expert[:, 0], torch.ones(tokens.shape[0], device=x.device))
        frac = load / tokens.shape[0]
        aux = self.n * (frac * probs.mean(0)).sum()
        return out.reshape(x.shape), aux, load


class TinyLM(nn.Module):
    def __init__(self, vocab=48, d=32, n_experts=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.norm = nn.LayerNorm(d)
        self.moe = TopKMoE(d, n_experts)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        h = self.emb(ids)
        m, aux, load = self.moe(self.norm(h))
        return self.head(h + m), aux, load


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--experts", type=int, default=4)
    ap.add_argument("--aux-weight", type=float, default=0.01)
    args = ap.parse_args()
    device = torch_xla.device()
    torch.manual_seed(0)
    model = TinyLM(n_experts=args.experts).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3, betas=(0.9, 0.98))
    usage = torch.zeros(args.experts, device=device)
    log = []
    for step in range(args.steps):
        ids = torch.randint(0, 48, (8, 17))
        ids = ids.to(device)
        logits, aux, load = model(ids[:, :-1])
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        loss = ce + args.aux_weight * aux
        opt.zero_grad()
        loss.backward()
        opt.step()
        usage += load.detach()
        xm.mark_step()
        log.append({"step": step, "ce": round(ce.item(), 4), "aux": round(aux.item(), 4)})
    share = (usage / usage.sum()).cpu().tolist()
    print("expert share", [round(s, 3) for s in share])
    with open("moe_log.json", "w") as f:
        json.dump({"log": log, "share": share}, f)
    xm.save(model.state_dict(), "moe.pt")


if __name__ == "__main__":
    main()
