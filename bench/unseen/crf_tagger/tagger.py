"""A BiGRU tagger with a linear-chain CRF."""
import os

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


class CRF(nn.Module):
    def __init__(self, tags):
        super().__init__()
        self.transitions = nn.Parameter(torch.randn(tags, tags) * 0.1)

    def log_partition(self, emissions):
        alpha = emissions[:, 0]
        for t in range(1, emissions.size(1)):
            alpha = torch.logsumexp(alpha.unsqueeze(2) + self.transitions + emissions[:, t].unsqueeze(1), dim=1)
        return torch.logsumexp(alpha, dim=1)

    def score(self, emissions, tags):
        s = emissions.gather(2, tags.unsqueeze(2)).squeeze(2).sum(1)
        s = s + self.transitions[tags[:, :-1], tags[:, 1:]].sum(1)
        return s

    def nll(self, emissions, tags):
        return (self.log_partition(emissions) - self.score(emissions, tags)).mean()

    def decode(self, emissions):
        score = emissions[:, 0]
        history = []
        for t in range(1, emissions.size(1)):
            best, idx = (score.unsqueeze(2) + self.transitions).max(dim=1)
            score = best + emissions[:, t]
            history.append(idx)
        last = score.argmax(dim=1)
        paths = [last]
        for idx in reversed(history):
            last = idx.gather(1, last.unsqueeze(1)).squeeze(1)
            paths.append(last)
        return torch.stack(paths[::-1], dim=1)


class Tagger(nn.Module):
    def __init__(self, vocab=50, tags=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, 32)
        self.rnn = nn.GRU(32, 32, batch_first=True, bidirectional=True)
        self.out = nn.Linear(64, tags)
        self.crf = CRF(tags)

    def forward(self, tokens):
        h, _ = self.rnn(self.emb(tokens))
        return self.out(h)


def batch(gen, n=16, length=10):
    tokens = torch.randint(0, 50, (n, length), generator=gen)
    return tokens, tokens % 5


def main():
    device = xm.xla_device()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = Tagger().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(12):
        tokens, tags = (t.to(device) for t in batch(gen))
        loss = model.crf.nll(model(tokens), tags)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} nll {loss.item():.4f}")
    tokens, tags = (t.to(device) for t in batch(gen))
    with torch.no_grad():
        pred = model.crf.decode(model(tokens))
    accuracy = (pred == tags).float().mean().item()
    print(f"tag accuracy {accuracy:.3f}", pred[0].tolist())


if __name__ == "__main__":
    os.environ.setdefault("XLA_USE_BF16", "1")
    main()
