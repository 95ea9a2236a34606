"""A GRU encoder-decoder trained with teacher forcing to reverse sequences."""
import os
import random

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

os.environ["XLA_USE_BF16"] = "1"
VOCAB, HID, LEN = 12, 32, 6


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, HID)
        self.gru = nn.GRU(HID, HID, batch_first=True)

    def forward(self, src):
        _, h = self.gru(self.emb(src))
        return h


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, HID)
        self.cell = nn.GRUCell(HID, HID)
        self.out = nn.Linear(HID, VOCAB)

    def forward(self, token, h):
        h = self.cell(self.emb(token), h)
        return self.out(h), h


def main():
    random.seed(0)
    torch.manual_seed(0)
    device = xm.xla_device()
    enc, dec = Encoder().to(device), Decoder().to(device)
    params = list(enc.parameters()) + list(dec.parameters())
    opt = torch.optim.Adam(params, lr=3e-3)
    crit = nn.CrossEntropyLoss()
    for step in range(12):
        src = torch.randint(1, VOCAB, (16, LEN))
        tgt = src.flip(1)
        src, tgt = src.to(device), tgt.to(device)
        h = enc(src).squeeze(0)
        token = torch.zeros(16, dtype=torch.long, device=device)
        loss = torch.zeros((), device=device)
        for t in range(LEN):
            logits, h = dec(token, h)
            loss = loss + crit(logits, tgt[:, t])
            token = tgt[:, t] if random.random() < 0.5 else logits.argmax(-1)
        loss = loss / LEN
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
