import os

os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch_xla  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402

from model import TokenBagClassifier  # noqa: E402
from trainer import Trainer  # noqa: E402


def make_batches(n_batches, bs=16, vocab=500, n_classes=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n_batches):
        labels = torch.randint(0, n_classes, (bs,), generator=g)
        lengths = torch.randint(3, 9, (bs,), generator=g)
        toks = [torch.randint(0, vocab // n_classes, (int(n),), generator=g) + int(c) * (vocab // n_classes) for n, c in zip(lengths, labels)]
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
        out.append((torch.cat(toks), offsets, labels))
    return out


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = TokenBagClassifier().to(device)
    trainer = Trainer(model, device)
    for i, (tokens, offsets, labels) in enumerate(make_batches(10)):
        loss = trainer.step(tokens, offsets, labels)
        xm.mark_step()
        print(f"step {i} loss {loss.item():.4f}")
    report = trainer.evaluate(make_batches(4, seed=1))
    print("DTYPES weight", model.mlp[0].weight.dtype, "loss", loss.dtype, "opt", type(trainer.opt).__name__,
          "exp_avg", trainer.opt.state[model.mlp[0].weight]["exp_avg"].dtype)
    print("REPORT", report)


if __name__ == "__main__":
    main()
