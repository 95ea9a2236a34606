"""G9 (amp): embeddings come out of the model under autocast in bf16 (the last Linear, then F.normalize);
the kNN vote after the model call, outside autocast, computes in bf16 (cdist, topk, softmax) and is
scatter_add_-ed into `torch.zeros(..., device=)`, f32 without the switch: scatter_add_ refuses the mix.
Under the switch both were bf16 on the device. The switch comes from the launcher (LEGACY_ENV)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
from _ir import ir_dtype


class Embedder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 4)

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = Embedder().to(device).eval()
    gx, qx = torch.randn(20, 8), torch.randn(5, 8)
    gy = (torch.arange(20) % 3).to(device)
    with torch.no_grad():
        ge = model(gx.to(device))
        qe = model(qx.to(device))
        d = torch.cdist(qe, ge)
        vals, idx = d.topk(3, largest=False)
        w = torch.softmax(-vals / 0.1, dim=1)
        print("embeddings: IR", ir_dtype(qe), "; vote weights: IR", ir_dtype(w))
        try:
            votes = torch.zeros(5, 3, device=device).scatter_add_(1, gy[idx], w)
        except RuntimeError as e:
            print("scatter_add_ raised:", str(e).splitlines()[0])
            return
    print("votes", votes.argmax(1).cpu().tolist())


if __name__ == "__main__":
    main()
