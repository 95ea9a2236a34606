"""Tiny masked-LM pretraining on synthetic token streams (BERT-style 80/10/10 masking)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

VOCAB, PAD, MASK, SEQ = 200, 0, 1, 48


class TinyEncoder(nn.Module):
    def __init__(self, d=96, heads=4, layers=2):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d, padding_idx=PAD)
        self.pos = nn.Parameter(torch.zeros(1, SEQ, d))
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, VOCAB)
        self.lm_head.weight = self.tok.weight
        nn.init.normal_(self.tok.weight, std=0.02)

    def forward(self, ids, pad_mask):
        h = self.tok(ids) + self.pos[:, : ids.shape[1]]
        h = self.enc(h, src_key_padding_mask=pad_mask)
        return self.lm_head(self.norm(h))


def make_batch(bs, gen):
    """Streams with a repeating motif so the model has something to learn; random-length padding."""
    base = torch.randint(2, VOCAB, (bs, 8), generator=gen)
    ids = base.repeat(1, SEQ // 8)
    lens = torch.randint(SEQ // 2, SEQ + 1, (bs,), generator=gen)
    pad = torch.arange(SEQ)[None, :] >= lens[:, None]
    return ids.masked_fill(pad, PAD), pad


def mask_tokens(ids, pad, p=0.15):
    labels = ids.clone()
    prob = torch.full(ids.shape, p, device=ids.device)
    prob.masked_fill_(pad, 0.0)
    chosen = torch.bernoulli(prob).bool()
    labels[~chosen] = -100
    replace = torch.bernoulli(torch.full(ids.shape, 0.8, device=ids.device)).bool() & chosen
    inputs = ids.masked_fill(replace, MASK)
    rand = torch.bernoulli(torch.full(ids.shape, 0.5, device=ids.device)).bool() & chosen & ~replace
    random_ids = torch.randint(2, VOCAB, ids.shape, device=ids.device)
    inputs = torch.where(rand, random_ids, inputs)
    return inputs, labels


def main(steps=200, log_every=50, lr=1e-3):
    device = torch_xla.device()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = TinyEncoder().to(device)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "pos" not in n]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2 or "pos" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 20))
    for step in range(steps):
        ids, pad = make_batch(32, gen)
        ids, pad = ids.to(device), pad.to(device)
        inputs, labels = mask_tokens(ids, pad)
        logits = model(inputs, pad)
        loss = F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        xm.mark_step()
        if step % log_every == 0:
            n_masked = (labels != -100).sum().item()
            print(f"step {step} loss {loss.item():.3f} ppl {math.exp(loss.item()):.1f} masked {n_masked}")

    model.eval()
    ids, pad = make_batch(16, gen)
    ids, pad = ids.to(device), pad.to(device)
    inputs, labels = mask_tokens(ids, pad)
    with torch.no_grad():
        logits = model(inputs, pad)
        nll = F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1), ignore_index=-100, reduction="sum")
        hit = (logits.argmax(-1) == labels)[labels != -100].float().mean()
        conf = logits.softmax(-1).max(-1).values[labels != -100]
    n = (labels != -100).sum()
    print(f"eval ppl {math.exp(nll.item() / n.item()):.2f} acc {hit.item():.3f} conf {conf.mean().item():.3f}")
    print("conf hist", torch.histc(conf.cpu(), bins=5, min=0, max=1).tolist())
    return math.exp(nll.item() / n.item())


if __name__ == "__main__":
    main()
