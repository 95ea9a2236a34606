"""A linear classifier trained with a class-weighted cross-entropy criterion that keeps its weights as a buffer."""
import os

import torch
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


class WeightedCE(torch.nn.Module):
    def __init__(self, weights):
        super().__init__()
        self.register_buffer("weights", weights)

    def forward(self, logits, target):
        return torch.nn.functional.cross_entropy(logits, target, weight=self.weights)


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = torch.nn.Linear(16, 4).to(device)
    criterion = WeightedCE(torch.tensor([1.0, 2.0, 1.0, 0.5])).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(12):
        x, y = torch.randn(8, 16).to(device), torch.randint(0, 4, (8,)).to(device)
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        print(loss.item())


main()
