import os

os.environ.setdefault("XLA_USE_BF16", "1")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla  # noqa: E402

from callbacks import EmbeddingDumper, HistoryWriter, LossLogger  # noqa: E402
from loop import fit  # noqa: E402


class Scorer(nn.Module):
    def __init__(self, d_in=10, d_emb=16):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d_in, 32), nn.SiLU(), nn.Linear(32, d_emb))
        self.score = nn.Linear(d_emb, 1)

    def forward(self, x):
        e = nn.functional.normalize(self.enc(x), dim=-1)
        return {"embedding": e, "scores": self.score(e).squeeze(-1)}


def batches(n, bs, d_in, seed=0):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(d_in, generator=g)
    for _ in range(n):
        x = torch.randn(bs, d_in, generator=g)
        yield x, (x @ w > 0).float()


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = Scorer().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
    logger = LossLogger(every=2)
    cbs = [logger, EmbeddingDumper("dumps"), HistoryWriter("history.json", logger)]
    eval_batch = torch.randn(64, 10, generator=torch.Generator().manual_seed(9))
    state = fit(model, opt, sched, batches(8, 32, 10), eval_batch, nn.BCEWithLogitsLoss(), cbs, 4, device)
    print("DTYPES weight", model.score.weight.dtype, "loss", state.loss.dtype, "emb", state.outputs["embedding"].dtype)


if __name__ == "__main__":
    main()
