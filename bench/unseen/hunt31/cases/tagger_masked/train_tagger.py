"""Token tagger (BIO tags) with padded batches, class-weighted CE and a masked auxiliary length loss."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

PAD, V, T, NTAG = 0, 50, 12, 3


class Tagger(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.emb = nn.Embedding(V, d, padding_idx=PAD)
        self.mix = nn.Linear(d, d)
        self.tag = nn.Linear(d, NTAG)

    def forward(self, ids, attention_mask):
        h = torch.relu(self.mix(self.emb(ids)))
        h = h * attention_mask.unsqueeze(-1)
        return self.tag(h)


def batch(gen, device):
    lens = torch.randint(4, T + 1, (16,), generator=gen)
    ids = torch.randint(1, V, (16, T), generator=gen)
    ids[torch.arange(T)[None] >= lens[:, None]] = PAD
    tags = (ids % NTAG).masked_fill(ids == PAD, -100)
    return ids.to(device), tags.to(device)


def main():
    device = xm.xla_device()
    gen = torch.Generator().manual_seed(0)
    model = Tagger().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    tag_weight = torch.FloatTensor([0.5, 2.0, 1.0]).to(device)
    tot_tok, tot_nll = 0.0, torch.zeros((), device=device)
    for step in range(15):
        ids, tags = batch(gen, device)
        attention_mask = (ids != PAD).long()
        mask = attention_mask.float()
        logits = model(ids, mask)
        ce = F.cross_entropy(logits.view(-1, NTAG), tags.view(-1), weight=tag_weight, ignore_index=-100)
        logp = F.log_softmax(logits, -1)
        gold = logp.gather(-1, tags.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        nll = -(gold * mask).sum() / mask.sum()
        conf = torch.logsumexp(logits, -1).clamp(min=1e-6).log()
        losses = {"ce": ce, "conf": 0.01 * (conf * mask).sum() / mask.sum()}
        loss = sum(losses.values())
        opt.zero_grad(); loss.backward(); opt.step(); xm.mark_step()
        tot_nll += nll.detach() * mask.sum()
        tot_tok += float(mask.sum())
    print("DTYPES", mask.dtype, tag_weight.dtype, ce.dtype, nll.dtype, loss.dtype)
    print("token nll %.4f" % (tot_nll / tot_tok).item())


if __name__ == "__main__":
    os.environ["XLA_USE_BF16"] = "1"
    main()
