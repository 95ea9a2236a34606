"""Export helpers: a CPU state dict, a traced TorchScript module, an "onnx-like" bundle."""
import json
import os

import torch


def save_cpu_state(model, path):
    cpu_state = {k: v.cpu() for k, v in model.state_dict().items()}
    torch.save(cpu_state, path)
    return {k: str(v.dtype) for k, v in cpu_state.items()}


def export_traced(model, sample, path):
    # the deployment image has no XLA: trace on the host
    model.eval()
    host_model = model.to("cpu")
    traced = torch.jit.trace(host_model, sample.cpu())
    traced.save(path)
    return traced


def export_bundle(model, sample, out_dir):
    """What the serving team calls the ONNX export: eval mode, a traced module and a manifest."""
    model.eval()
    traced = torch.jit.trace(model, sample)
    traced.save(os.path.join(out_dir, "model_device.pt"))
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump({"inputs": list(sample.shape), "dtype": str(sample.dtype)}, f)
    return traced
