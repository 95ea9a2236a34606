"""Control for gap 1: the same trainer with the move written inline in BaseTrainer.step (no to_device method): migrated right."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from base import BaseTrainer  # noqa: E402


class Trainer(BaseTrainer):
    def build_model(self):
        torch.manual_seed(0)
        return nn.Linear(4, 1)

    def configure_optimizers(self):
        return torch.optim.SGD(self.model.parameters(), lr=0.1)

    def compute_loss(self, out, batch):
        return F.mse_loss(out.squeeze(-1), batch["y"])


t = Trainer()
g = torch.Generator().manual_seed(0)
for step in range(int(os.environ.get("STEPS", "3"))):
    x = torch.randn(8, 4, generator=g)
    loss = t.step({"x": x, "y": x.sum(1).double()})
    print(step, loss.item(), "DTYPES", next(t.model.parameters()).dtype, loss.dtype)
