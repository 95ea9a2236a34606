"""How much of the standardised signal survives: legacy device dtype (f32) vs the migrated one (bf16)."""
import numpy as np
import torch

raw = 5e4 + 1e3 * np.sin(np.linspace(0, 20, 256))[:, None] + np.random.default_rng(0).normal(0, 5, (256, 4))
truth = torch.from_numpy((raw - raw.mean(0)) / raw.std(0, ddof=1))
for name, dt in (("legacy downcast switch (f64 -> f32 on device)", torch.float32), ("migrated floating_to_bf16 (bf16)", torch.bfloat16)):
    x64 = torch.from_numpy(raw).to(dt)
    x = ((x64 - x64.mean(0)) / x64.std(0)).float().double()
    print(f"{name}: max abs error of the standardised input {(x - truth).abs().max().item():.4f}, "
          f"distinct values in column 0: {x[:, 0].unique().numel()} of 256")
