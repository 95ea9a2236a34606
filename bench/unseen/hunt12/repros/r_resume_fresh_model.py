"""G4b: resume in the same script: a second, fresh model `Net().to(device)` is built, loaded from the
checkpoint and trained on. The migration casts the first model (before its optimizer) but not the second:
phase 2 trains in f32 where the legacy run trained in bf16. The switch comes from the launcher (LEGACY_ENV)."""
import io

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
from _ir import dot_dtypes, ir_dtype


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    x = torch.randn(8, 4)
    model = Net().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(x.to(device)).pow(2).mean()
    loss.backward()
    opt.step()
    xm.mark_step()
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, buf)
    buf.seek(0)
    ckpt = torch.load(buf, map_location="cpu")

    model = Net().to(device)
    model.load_state_dict(ckpt["model"])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt.load_state_dict(ckpt["optimizer"])
    out = model(x.to(device))
    print("resumed model: weight IR", ir_dtype(model.fc.weight), "; forward dots", dot_dtypes(out))
    out.pow(2).mean().backward()
    opt.step()
    xm.mark_step()


if __name__ == "__main__":
    main()
