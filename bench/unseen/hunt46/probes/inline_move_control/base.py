import torch_xla


class BaseTrainer:
    def __init__(self):
        self.device = torch_xla.device()
        self.model = self.build_model().to(self.device)
        self.opt = self.configure_optimizers()

    def step(self, batch):
        batch = {k: v.to(self.device) for k, v in batch.items()}
        loss = self.compute_loss(self.model(batch["x"]), batch)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        torch_xla.sync()
        return loss
