"""A small trainer framework: subclasses override the hooks they need."""
import time

import torch
import torch_xla


class ToDeviceMixin:
    """Moves a batch (tensor, tuple/list or dict of tensors) to self.device."""

    def to_device(self, batch):
        if isinstance(batch, torch.Tensor):
            return batch.to(self.device)
        if isinstance(batch, dict):
            return {k: self.to_device(v) for k, v in batch.items()}
        if isinstance(batch, (list, tuple)):
            return type(batch)(self.to_device(b) for b in batch)
        return batch


class BaseTrainer(ToDeviceMixin):
    def __init__(self, cfg):
        self.cfg = cfg
        self.device = torch_xla.device()
        self.model = self.build_model().to(self.device)
        self.optimizer = self.configure_optimizers()
        self.history = []

    # hooks -----------------------------------------------------------
    def build_model(self):
        raise NotImplementedError

    def configure_optimizers(self):
        return torch.optim.SGD(self.model.parameters(), lr=self.cfg["lr"], momentum=0.9)

    def compute_loss(self, out, batch):
        raise NotImplementedError

    def train_step(self, batch):
        batch = self.to_device(batch)
        out = self.model(batch["x"])
        loss = self.compute_loss(out, batch)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        torch_xla.sync()
        return loss

    @torch.no_grad()
    def eval_step(self, batch):
        batch = self.to_device(batch)
        out = self.model(batch["x"])
        return self.compute_loss(out, batch)

    # loop ------------------------------------------------------------
    def fit(self, train_batches, val_batches):
        t0 = time.time()
        for step, batch in enumerate(train_batches):
            loss = self.train_step(batch)
            self.history.append(loss.item())
            print(f"step {step} loss {self.history[-1]:.5f}")
        val = torch.stack([self.eval_step(b) for b in val_batches]).mean()
        print(f"val {val.item():.5f} ({time.time() - t0:.1f}s)")
        return val
