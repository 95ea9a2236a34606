"""Run a script (``python device_probe.py OUT.json SCRIPT [ARGS...]``) with a global forward hook
that records, for every outermost module call on the XLA device, the module's class, the dtypes of
its floating parameters, the dtype of its output and whether autocast was on for XLA: what
tests/test_device_modules.py holds each migrated fixture to (every module on the device bf16, or
its forward under autocast in amp). The script runs as ``__main__``; the record is written at exit,
also when it raises."""

from __future__ import annotations

import atexit
import json
import runpy
import sys
from typing import TypedDict

import torch
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook


class _Calls(TypedDict):
    """What the record holds of one module class: its floating parameters' dtypes, its outputs'
    dtypes (torch's names) and whether autocast was on for XLA at every call."""

    params: list[str]
    outputs: list[str]
    autocast: bool


calls: dict[str, _Calls] = {}
depth = [0]


def _pre(module, args):
    depth[0] += 1
    if depth[0] == 1:
        params = {str(p.dtype) for p in module.parameters() if p.is_floating_point() and p.device.type == "xla"}
        if params:
            entry = calls.setdefault(type(module).__name__, {"params": [], "outputs": [], "autocast": True})
            entry["params"] = sorted(set(entry["params"]) | params)
            entry["autocast"] = bool(entry["autocast"]) and torch.is_autocast_enabled("xla")


def _post(module, args, output):
    if depth[0] == 1 and type(module).__name__ in calls and isinstance(output, torch.Tensor):
        entry = calls[type(module).__name__]
        entry["outputs"] = sorted(set(entry["outputs"]) | {str(output.dtype)})
    depth[0] -= 1


def _write(path: str) -> None:
    with open(path, "w") as out:
        json.dump(calls, out, indent=1, sort_keys=True)


if __name__ == "__main__":
    record, script, *rest = sys.argv[1:]
    atexit.register(_write, record)
    register_module_forward_pre_hook(_pre)
    register_module_forward_hook(_post)
    sys.argv = [script, *rest]
    runpy.run_path(script, run_name="__main__")
