"""What each host exit hands the host, under the legacy switches and after the migrations (rules/host_exits.toml).

Four runs, each in its own process (torch-xla reads the legacy variables once per process), of one
small model on the XLA CPU device: ``XLA_USE_BF16=1``, ``XLA_DOWNCAST_BF16=1``, the model cast to
bf16 with its input (``model.to(torch.bfloat16)``), and FP32 under ``torch.autocast("xla",
dtype=torch.bfloat16)``. Each exit's result is recorded (its type, dtype, device and values, or the
exception it raised), then printed side by side. ``--graphs`` measures instead what a cast at the
exit costs the device (``torch_xla.debug.metrics``: compilations, executions, transfers from the
device) for a cast after the copy and before it, and for a checkpoint saved through
``host_float32`` or cast on the device, with the model's tensors materialized (after a
``mark_step``) or still pending.

Usage (holding the machine's lock)::

    flock /tmp/bfm-xla.lock env PYTHONPATH=$PWD python bench/measure_host_exits.py [--graphs]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bf16_migrate.rules import load_rules  # noqa: E402

SWITCHES = sorted(name for name, rule in load_rules().variables.items() if rule.effective)
"""The legacy variables that still take effect (rules/XLA_*.toml)."""
CONFIGS = {**{f"legacy {name}": name for name in SWITCHES}, "model cast": "", "amp": ""}


def child(config: str) -> None:
    """One run: every exit of a small model's tensors, as JSON on stdout."""
    import numpy as np
    import torch
    import torch.nn as nn
    import torch_xla
    import torch_xla.core.xla_model as xm

    spec = importlib.util.spec_from_file_location(
        "convert_np", os.path.join(os.path.dirname(torch.__file__), "utils", "tensorboard", "_convert_np.py")
    )
    assert spec is not None and spec.loader is not None
    tensorboard = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tensorboard)  # make_np only: the tensorboard package itself is not needed

    device = torch_xla.device()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(device)
    x = torch.randn(5, 8).to(device)
    if config == "model cast":
        model.to(torch.bfloat16)
        x = x.to(torch.bfloat16)
    if config == "amp":
        with torch.autocast("xla", dtype=torch.bfloat16):
            out = model(x)
    else:
        out = model(x)
    out = out.detach()
    probs = torch.softmax(out, -1)
    labels = torch.arange(5).to(device)
    xm.mark_step()
    found = {}

    def record(name, fn):
        try:
            v = fn()
        except Exception as e:  # the exit's own error is the measurement
            found[name] = f"raises {type(e).__name__}: {str(e)[:70]}"
            return
        if isinstance(v, torch.Tensor):
            found[name] = f"{v.dtype} on {v.device.type}: {v.double().flatten()[:3].tolist()}"
        elif isinstance(v, np.ndarray):
            found[name] = f"ndarray {v.dtype}: {v.astype(np.float64).flatten()[:3].tolist()}"
        else:
            found[name] = f"{type(v).__name__}: {str(v)[:70]}"

    record("t.cpu()", lambda: out.cpu())
    record('t.to("cpu")', lambda: out.to("cpu"))
    record('t.to(torch.device("cpu"))', lambda: out.to(torch.device("cpu")))
    record("t.numpy() (device)", lambda: out.numpy())
    record("np.asarray(t) (device)", lambda: np.asarray(out))
    record("t.cpu().numpy()", lambda: out.cpu().numpy())
    record("t.tolist()", lambda: out.tolist()[0])
    record("t.cpu().tolist()", lambda: out.cpu().tolist()[0])
    record("t[0, 0].item()", lambda: out[0, 0].item())
    record('f"{t[0, 0]:.6f}"', lambda: f"{out[0, 0]:.6f}")
    record("labels.cpu()", lambda: labels.cpu())
    record("sum of t.cpu() (host arithmetic)", lambda: out.cpu().sum())
    record("mean of 3.3 x softmax(t).cpu()", lambda: (probs.cpu() * 3.3).mean())
    where = tempfile.mkdtemp()

    def saved(save, path):
        save(model.state_dict(), path)
        state = torch.load(path, weights_only=False)
        return sorted({f"{v.dtype} on {v.device.type}" for v in state.values()})

    record("xm.save(model.state_dict())", lambda: saved(xm.save, os.path.join(where, "a.pt")))
    record("torch.save(model.state_dict())", lambda: saved(torch.save, os.path.join(where, "b.pt")))
    record("xm.mesh_reduce(tag, t, fn)", lambda: xm.mesh_reduce("t", out, lambda xs: xs[0]))
    record("xm.mesh_reduce(tag, t.item(), np.mean)", lambda: xm.mesh_reduce("s", out[0, 0].item(), np.mean))
    record("TensorBoard make_np(t) (add_histogram)", lambda: tensorboard.make_np(out))
    record("TensorBoard make_np(t[0, 0]) (add_scalar)", lambda: tensorboard.make_np(out[0, 0]))
    record("TensorBoard make_np(1e-6 x t)", lambda: tensorboard.make_np(out[:1, :3] * 1e-6))
    lo, hi = probs.min(), probs.max()
    record("uint8 image made on the device (wandb.Image)", lambda: ((probs - lo) / (hi - lo)).mul(255).byte().cpu())
    print(json.dumps(found))


def graphs(config: str, case: str) -> None:
    """What one way of handing a bf16 value to the host costs the device, as one JSON line."""
    import torch
    import torch.nn as nn
    import torch_xla
    import torch_xla.core.xla_model as xm
    import torch_xla.debug.metrics as met

    namespace: dict[str, Any] = {"torch": torch}
    from bf16_migrate.python.snippets import HOST_FLOAT32_SOURCE

    exec(HOST_FLOAT32_SOURCE, namespace)
    host_float32: Callable[[Any], Any] = namespace["host_float32"]
    device = torch_xla.device()
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(64, 64) for _ in range(6)]).to(device)
    if config != "legacy":
        model.to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(32, 64).to(device)
    if config != "legacy":
        x = x.to(torch.bfloat16)

    def step():
        optimizer.zero_grad()
        out = model(x)
        out.float().pow(2).mean().backward()
        optimizer.step()
        return out

    for _ in range(3):
        out = step()
        xm.mark_step()
    if case.endswith("pending"):
        out = step()  # no mark_step: the parameters and the output are pending

    def counts():
        return [(met.metric_data(m) or (0,))[0] for m in ("CompileTime", "ExecuteTime", "TransferFromDeviceTime")]

    path = os.path.join(tempfile.mkdtemp(), "m.pt")
    kind = case.replace(" pending", "")
    before = counts()
    if kind == "xm.save(state_dict)":
        xm.save(model.state_dict(), path)
    elif kind == "xm.save(host_float32(state_dict))":
        xm.save(host_float32(model.state_dict()), path)
    elif kind == "xm.save(state_dict cast on the device)":
        xm.save({k: v.float() for k, v in model.state_dict().items()}, path)
    elif kind == "t.cpu()":
        out.cpu()
    elif kind == "t.cpu().float()":
        out.cpu().float()
    elif kind == "t.float().cpu()":
        out.float().cpu()
    after = counts()
    print(json.dumps({"run": config, "exit": case, "added": [b - a for a, b in zip(before, after)]}))


GRAPH_CASES = [
    ("legacy", "t.cpu()"),
    ("model cast", "t.cpu().float()"),
    ("model cast", "t.float().cpu()"),
    ("legacy", "t.cpu() pending"),
    ("model cast", "t.cpu().float() pending"),
    ("model cast", "t.float().cpu() pending"),
    ("legacy", "xm.save(state_dict)"),
    ("model cast", "xm.save(host_float32(state_dict))"),
    ("model cast", "xm.save(state_dict cast on the device)"),
    ("legacy", "xm.save(state_dict) pending"),
    ("model cast", "xm.save(host_float32(state_dict)) pending"),
    ("model cast", "xm.save(state_dict cast on the device) pending"),
]


def _spawn(args: list[str], variable: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in SWITCHES}
    env["PJRT_DEVICE"] = "CPU"
    if variable:
        env[variable] = "1"
    proc = subprocess.run([sys.executable, __file__, *args], env=env, capture_output=True, text=True, check=True)
    return proc.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graphs", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--graph-case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child and args.graph_case:
        graphs(args.child, args.graph_case)
        return
    if args.child:
        child(args.child)
        return
    if args.graphs:
        print("| run | exit | compilations | executions | transfers from the device |")
        print("|---|---|---|---|---|")
        for config, case in GRAPH_CASES:
            switch = SWITCHES[-1] if config == "legacy" else ""  # the one that also makes f64 bf16
            found = json.loads(_spawn(["--child", config, "--graph-case", case], switch))
            print(f"| {config} | `{case}` | +{found['added'][0]} | +{found['added'][1]} | +{found['added'][2]} |")
        return
    results = {name: json.loads(_spawn(["--child", name], variable)) for name, variable in CONFIGS.items()}
    for exit_name in results["model cast"]:
        print(f"{exit_name}:")
        for name in CONFIGS:
            print(f"    {name:26s} {results[name][exit_name]}")


if __name__ == "__main__":
    main()
