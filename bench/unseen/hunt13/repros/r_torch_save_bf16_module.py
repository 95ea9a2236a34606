"""`torch.save(model)` of a whole module on the XLA device. Under the switch its tensors pickle as float32;
after `model.to(torch.bfloat16)` torch pickles an XLA tensor through `.cpu().numpy()` (Tensor._reduce_ex_internal),
which has no bf16. The tool wraps the module in host_float32(model, back_to_device=True), which returns modules
as they are, and the module pickles the input pre-hook the tool registered, a function of the
migrated script's __main__: another process cannot load the file (amp too). Also: a deepcopy of the module moved to the CPU keeps the bf16 weights (and the bf16 input pre-hook)."""
import copy
import io
import subprocess
import sys
import tempfile

import torch
import torch.nn as nn
import torch_xla
from _data import features


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = features(16, 4)
    loss = model(x.to(device)).square().mean()
    loss.backward()
    opt.step()
    torch_xla.sync()
    cpu_model = copy.deepcopy(model).cpu()
    print("cpu copy weight dtype:", cpu_model[0].weight.dtype)
    with torch.no_grad():
        out = cpu_model(x)
    print("host forward dtype:", out.dtype, "mean", out.mean().item())
    buf = io.BytesIO()
    torch.save(model, buf)
    buf.seek(0)
    back = torch.load(buf, weights_only=False)
    print("torch.save(model): saved weight dtype", back[0].weight.dtype, "on", back[0].weight.device)
    path = tempfile.mktemp(suffix=".pt")
    torch.save(model, path)
    reader = "import torch, torch_xla; m = torch.load(%r, weights_only=False); print('loaded', m[0].weight.dtype)" % path
    r = subprocess.run([sys.executable, "-c", reader], capture_output=True, text=True)
    print("another process loads it:", (r.stdout.strip() or r.stderr.strip().splitlines()[-1]))


if __name__ == "__main__":
    main()
