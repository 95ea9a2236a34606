"""Model construction from a config dict; the encoder can be frozen."""

import contextlib

import torch
import torch.nn as nn


@contextlib.contextmanager
def maybe_no_grad(enabled):
    if enabled:
        with torch.no_grad():
            yield
    else:
        yield


class ConvEncoder(nn.Module):
    def __init__(self, in_ch, hidden):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(in_ch, hidden, 5, padding=2), nn.GELU(),
            nn.Conv1d(hidden, hidden, 3, padding=1), nn.GELU(),
        )

    def forward(self, x):
        return self.net(x.transpose(1, 2)).mean(-1)


class Regressor(nn.Module):
    def __init__(self, encoder, hidden, n_out, freeze_encoder=False):
        super().__init__()
        self.encoder = encoder
        self.freeze_encoder = freeze_encoder
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, n_out))

    def forward(self, x):
        with maybe_no_grad(self.freeze_encoder):
            h = self.encoder(x)
        return self.head(h)


def build_model(in_ch, hidden, n_out, freeze_encoder=False):
    return Regressor(ConvEncoder(in_ch, hidden), hidden, n_out, freeze_encoder=freeze_encoder)
