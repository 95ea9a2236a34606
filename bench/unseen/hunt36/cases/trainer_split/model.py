import torch
import torch.nn as nn


class ConvClassifier(nn.Module):
    """Conv1d stack with a positional channel and masked mean pooling."""

    def __init__(self, n_classes=3, width=32):
        super().__init__()
        self.conv1 = nn.Conv1d(2, width, kernel_size=5, padding=2)
        self.conv2 = nn.Conv1d(width, width, kernel_size=5, padding=2)
        self.norm = nn.GroupNorm(4, width)
        self.head = nn.Linear(width, n_classes)

    def forward(self, x, valid_len=None):
        b, _, t = x.shape
        pos = torch.arange(t, device=x.device, dtype=torch.float32) / t
        x = torch.cat([x, pos.expand(b, 1, t)], dim=1)
        h = torch.relu(self.norm(self.conv1(x)))
        h = torch.relu(self.conv2(h))
        mask = torch.ones(b, t, device=x.device)
        if valid_len is not None:
            mask = (torch.arange(t, device=x.device)[None, :] < valid_len[:, None]).float()
        pooled = (h * mask[:, None, :]).sum(-1) / mask.sum(-1, keepdim=True)
        return self.head(pooled)
