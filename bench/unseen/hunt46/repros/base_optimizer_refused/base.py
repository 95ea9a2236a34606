import torch
import torch_xla


class ToDeviceMixin:
    def to_device(self, batch):
        if isinstance(batch, torch.Tensor):
            return batch.to(self.device)
        if isinstance(batch, dict):
            return {k: self.to_device(v) for k, v in batch.items()}
        return batch


class BaseTrainer(ToDeviceMixin):
    def __init__(self):
        self.device = torch_xla.device()
        self.model = self.build_model().to(self.device)
        self.opt = self.configure_optimizers()

    def configure_optimizers(self):
        return torch.optim.SGD(self.model.parameters(), lr=0.1)

    def step(self, batch):
        batch = self.to_device(batch)
        loss = self.compute_loss(self.model(batch["x"]), batch)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        torch_xla.sync()
        return loss
