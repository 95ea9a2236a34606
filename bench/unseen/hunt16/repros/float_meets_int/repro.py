"""Minimal: a mask made float and divided by integer lengths, then fed into the bf16 stream."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla


class Pool(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 8)
        self.head = nn.Linear(8, 2)

    def forward(self, ids, lengths):
        valid = torch.arange(ids.shape[1], device=ids.device)[None, :] < lengths[:, None]
        frac = valid.float() / lengths[:, None]
        pooled = (frac.unsqueeze(-1) * self.emb(ids)).sum(1)
        return self.head(pooled)


def main():
    device = torch_xla.device()
    model = Pool().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ids = torch.randint(0, 50, (4, 6)).to(device)
    lengths = torch.tensor([6, 3, 2, 5]).to(device)
    labels = torch.tensor([0, 1, 1, 0]).to(device)
    loss = nn.functional.cross_entropy(model(ids, lengths), labels)
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(loss.item())


if __name__ == "__main__":
    main()
