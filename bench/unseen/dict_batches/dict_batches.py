"""A tiny text classifier whose model computes its own loss from the batch dict (HF style)."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class Classifier(nn.Module):
    def __init__(self, vocab=100, dim=32, labels=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, labels)

    def forward(self, input_ids, attention_mask, labels=None, sample_weight=None):
        mask = attention_mask.unsqueeze(-1).to(self.emb.weight.dtype)
        pooled = (self.emb(input_ids) * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        logits = self.head(pooled)
        out = {"logits": logits}
        if labels is not None:
            per = F.cross_entropy(logits, labels, reduction="none")
            out["loss"] = (per * sample_weight).mean() if sample_weight is not None else per.mean()
        return out


def batches(n, seed):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n):
        ids = torch.randint(1, 100, (16, 12), generator=g)
        mask = (torch.rand(16, 12, generator=g) > 0.2).long()
        labels = ids[:, 0] % 3
        weight = torch.rand(16, generator=g) + 0.5
        yield {"input_ids": ids, "attention_mask": mask, "labels": labels, "sample_weight": weight}


def main():
    torch.manual_seed(0)
    device = xm.xla_device()
    model = Classifier().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    for step, batch in enumerate(batches(12, 0)):
        batch = {k: v.to(device) for k, v in batch.items()}
        outputs = model(**batch)
        loss = outputs["loss"]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    model.eval()
    with torch.no_grad():
        probs = torch.softmax(model(**{k: v.to(device) for k, v in next(batches(1, 1)).items()})["logits"], -1)
    print("mean max prob", probs.max(-1).values.mean().item())


if __name__ == "__main__":
    os.environ["XLA_USE_BF16"] = "1"
    main()
