"""LSTM encoder-decoder that learns to reverse short token sequences (teacher forcing)."""

import argparse
import os

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

PAD, BOS = 0, 1


class Encoder(nn.Module):
    def __init__(self, vocab: int, emb: int, hidden: int, layers: int):
        super().__init__()
        self.hidden, self.layers = hidden, layers
        self.embed = nn.Embedding(vocab, emb, padding_idx=PAD)
        self.rnn = nn.LSTM(emb, hidden, num_layers=layers, batch_first=True)

    def forward(self, src):
        b = src.size(0)
        h0 = torch.zeros(self.layers, b, self.hidden, device=src.device)
        c0 = torch.zeros(self.layers, b, self.hidden, device=src.device)
        _, (h, c) = self.rnn(self.embed(src), (h0, c0))
        return h, c


class Decoder(nn.Module):
    def __init__(self, vocab: int, emb: int, hidden: int, layers: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb, padding_idx=PAD)
        self.rnn = nn.LSTM(emb, hidden, num_layers=layers, batch_first=True)
        self.proj = nn.Linear(hidden, vocab)

    def forward(self, tokens, state):
        out, state = self.rnn(self.embed(tokens), state)
        return self.proj(out), state


class Seq2Seq(nn.Module):
    def __init__(self, vocab=16, emb=16, hidden=32, layers=1):
        super().__init__()
        self.encoder = Encoder(vocab, emb, hidden, layers)
        self.decoder = Decoder(vocab, emb, hidden, layers)

    def forward(self, src, tgt):
        state = self.encoder(src)
        bos = torch.full((tgt.size(0), 1), BOS, dtype=torch.long, device=tgt.device)
        dec_in = torch.cat([bos, tgt[:, :-1]], dim=1)
        logits, _ = self.decoder(dec_in, state)
        return logits


def make_pairs(n: int, length: int, vocab: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(2, vocab, (n, length), generator=g)
    return src, src.flip(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=6)
    parser.add_argument("--lr", type=float, default=1e-2)
    args = parser.parse_args()

    os.environ.update(XLA_USE_BF16="1")
    torch.manual_seed(1)
    device = xm.xla_device()

    model = Seq2Seq().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss(ignore_index=PAD)
    src_all, tgt_all = make_pairs(args.batch * 4, args.seq_len, 16, seed=3)

    for step in range(args.steps):
        lo = (step % 4) * args.batch
        src = src_all[lo : lo + args.batch].to(device)
        tgt = tgt_all[lo : lo + args.batch].to(device)
        optimizer.zero_grad()
        logits = model(src, tgt)
        loss = criterion(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1))
        loss.backward()
        optimizer.step()
        xm.mark_step()
        if step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
