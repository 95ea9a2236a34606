"""Synthetic multi-series demand data: daily seasonality, a trend and noise, two channels."""

import numpy as np

WINDOW, HORIZON, CHANNELS = 24, 6, 2


def make_series(n_series: int = 16, length: int = 400, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    phase = rng.uniform(0, 2 * np.pi, size=(n_series, 1))
    level = rng.uniform(0.5, 2.0, size=(n_series, 1))
    season = 0.5 * np.sin(2 * np.pi * t / 24 + phase)
    demand = level + season + 0.001 * t + 0.1 * rng.standard_normal((n_series, length))
    temperature = np.cos(2 * np.pi * t / 24 + phase) + 0.1 * rng.standard_normal((n_series, length))
    return np.stack([demand, temperature], axis=1)  # (series, channels, time), float64


def windows(series: np.ndarray, rng: np.random.Generator, batch: int):
    """A batch of (inputs (batch, channels, WINDOW), targets (batch, HORIZON)) as float64."""
    s = rng.integers(0, series.shape[0], size=batch)
    start = rng.integers(0, series.shape[2] - WINDOW - HORIZON, size=batch)
    x = np.stack([series[i, :, j : j + WINDOW] for i, j in zip(s, start)])
    y = np.stack([series[i, 0, j + WINDOW : j + WINDOW + HORIZON] for i, j in zip(s, start)])
    return x, y
