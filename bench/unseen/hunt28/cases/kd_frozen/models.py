"""Small conv nets for the distillation experiment; build_model picks one by name."""
import torch.nn as nn


class ConvNet(nn.Module):
    def __init__(self, width: int, classes: int = 10):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1, stride=2), nn.BatchNorm2d(width), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.body(x))


def build_model(name: str, classes: int = 10) -> nn.Module:
    widths = {"teacher": 32, "student": 8}
    return ConvNet(widths[name], classes)
