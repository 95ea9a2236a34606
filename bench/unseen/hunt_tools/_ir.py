"""Shared by the repros: the device dtype of a lazy tensor read from its IR (under the switch t.dtype says
float32 whatever the device holds), and the dtypes of the dots in a tensor's HLO."""
import re

import torch_xla

X = torch_xla._XLAC


def ir_dtype(t):
    lines = [l for l in X._get_xla_tensors_text([t]).splitlines() if l.strip().startswith("%")]
    return lines[-1].split("=")[1].split("[")[0].strip()


def dot_dtypes(t):
    hlo = X._get_xla_tensors_hlo([t])
    found = re.findall(r"= (\w+)\[[^\]]*\][^ ]* dot\(", hlo)
    return {k: found.count(k) for k in sorted(set(found))}
