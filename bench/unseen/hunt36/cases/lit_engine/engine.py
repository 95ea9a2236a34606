import numpy as np
import torch
import torch_xla
import torch_xla.core.xla_model as xm


class Engine:
    """A minimal fit/validate loop for modules with training_step / configure_optimizers."""

    def __init__(self, max_steps=8, log_every=2):
        self.max_steps = max_steps
        self.log_every = log_every
        self.device = torch_xla.device()

    def _to_device(self, batch):
        return [t.to(self.device) for t in batch]

    def fit(self, module, loader):
        module.to(self.device)
        opt = module.configure_optimizers()
        step = 0
        while step < self.max_steps:
            for batch in loader:
                loss = module.training_step(self._to_device(batch), step)
                opt.zero_grad()
                loss.backward()
                xm.optimizer_step(opt)
                torch_xla.sync()
                if step % self.log_every == 0:
                    print(f"step {step} loss {loss.item():.4f}")
                step += 1
                if step >= self.max_steps:
                    break
        self.last_loss = loss
        return module

    @torch.no_grad()
    def validate(self, module, loader):
        maes, preds = [], []
        for i, batch in enumerate(loader):
            out = module.validation_step(self._to_device(batch), i)
            maes.append(out["mae"].item())
            preds.append(out["pred"].cpu().numpy())
        return float(np.mean(maes)), np.concatenate(preds)
