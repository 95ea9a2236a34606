"""Metric learning with a cross-batch memory (XBM): embeddings of past batches stay in a
ring buffer on the device and serve as extra positives and negatives."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


def with_fp32_master_weights(optimizer_class):
    """Return a subclass of `optimizer_class` that keeps an FP32 master copy of bf16 weights.

    Added by bf16-migrate (gpu-compatible mode of Neuron's migration guide,
    replacing the legacy bf16 environment switch): the model's parameters stay bf16; each step
    runs the stock update in FP32 on the master weights (so its state, e.g. Adam's moments, is
    FP32 too) and copies the result into the bf16 parameters. `state_dict()` carries the master weights under
    "fp32_master_weights" (as torch-xla's ZeroRedundancyOptimizer does with save_master_weights)
    and `load_state_dict()` restores them, keeping the state FP32. A checkpoint without them, or
    weights changed outside the optimizer, start the master copy anew from the bf16 weights,
    with a warning.
    """
    import warnings

    class FP32MasterWeights(optimizer_class):
        def _swap_in_fp32(self, grads, loaded=None):
            # each bf16 parameter's data (and gradient) replaced by its FP32 master copy
            if not hasattr(self, "fp32_master_weights"):
                self.fp32_master_weights = {}  # parameter -> (master copy, parameter._version)
            swapped = []
            params = [p for group in self.param_groups for p in group["params"]]
            for index, param in enumerate(params):
                if param.dtype == torch.float32 or not param.is_floating_point() or (grads and param.grad is None):
                    continue
                if loaded is not None:
                    master = loaded.get(index)
                    if master is None:
                        warnings.warn("the checkpoint has no FP32 master weights (written before the migration?): they start anew from the bf16 weights")
                else:
                    master, version = self.fp32_master_weights.get(param, (None, None))
                    if master is not None and version != param._version:
                        warnings.warn("bf16 weights changed outside the optimizer: their FP32 master weights start anew from them")
                        master = None
                low_grad = param.grad
                swapped.append((param, param.data, low_grad))
                param.grad = None
                param.data = (param.detach() if master is None else master).to(device=param.device, dtype=torch.float32)
                if grads:
                    param.grad = low_grad.float()
            return swapped

        def _swap_back(self, swapped, copy_back):
            for param, low_data, low_grad in swapped:
                master = param.data
                if copy_back:
                    low_data.copy_(master)
                param.grad = None
                param.data = low_data
                param.grad = low_grad
                self.fp32_master_weights[param] = (master, param._version)

        def step(self, closure=None):
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            with torch.no_grad():
                swapped = self._swap_in_fp32(grads=True)
                try:
                    super().step()
                finally:
                    self._swap_back(swapped, copy_back=True)
            return loss

        def state_dict(self):
            with torch.no_grad():
                self._swap_back(self._swap_in_fp32(grads=False), copy_back=False)
            state_dict = super().state_dict()
            params = [p for group in self.param_groups for p in group["params"]]
            masters = self.fp32_master_weights
            state_dict["fp32_master_weights"] = {i: masters[p][0] for i, p in enumerate(params) if p in masters}
            return state_dict

        def load_state_dict(self, state_dict):
            state_dict = dict(state_dict)
            loaded = state_dict.pop("fp32_master_weights", {})
            with torch.no_grad():
                swapped = self._swap_in_fp32(grads=False, loaded=loaded)
                try:
                    super().load_state_dict(state_dict)  # floating state takes each parameter's dtype: FP32 here
                finally:
                    self._swap_back(swapped, copy_back=False)

    FP32MasterWeights.__name__ = optimizer_class.__name__ + "WithFP32MasterWeights"
    return FP32MasterWeights


def bf16_on_xla(tensor):
    """Return `tensor` as the legacy bf16 environment switch held it: a floating tensor on an XLA
    device as torch.bfloat16; one on another device (the host's CPU) and an integer or boolean
    one, and anything that is not a tensor, as it is.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor on the XLA device was bf16) where the code does not tell on which device the
    tensor is made.
    """
    if isinstance(tensor, torch.Tensor) and tensor.device.type == "xla" and tensor.is_floating_point():
        return tensor.to(torch.bfloat16)
    return tensor


class CrossBatchMemory:
    def __init__(self, size, dim, device):
        self.feats = torch.zeros(size, dim, device=device, dtype=torch.bfloat16)
        self.labels = torch.full((size,), -1, dtype=torch.long, device=device)
        self.size = size
        self.ptr = 0

    @torch.no_grad()
    def enqueue(self, emb, y):
        b = emb.shape[0]
        self.feats[self.ptr:self.ptr + b] = emb.detach()
        self.labels[self.ptr:self.ptr + b] = y
        self.ptr = (self.ptr + b) % self.size


def contrastive(emb, y, ref, ref_y, margin=0.4):
    sim = emb @ ref.t()
    valid = (ref_y[None, :] >= 0).to(sim.dtype)
    pos = (y[:, None] == ref_y[None, :]).to(sim.dtype) * valid
    neg = (1.0 - pos) * valid
    pos_loss = ((1.0 - sim) * pos).sum() / pos.sum().clamp(min=1.0)
    neg_loss = (F.relu(sim - margin) * neg).sum() / neg.sum().clamp(min=1.0)
    return pos_loss + neg_loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mem", type=int, default=128)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    centers = torch.randn(8, 24) * 2.0
    encoder = nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 16)).to(device)
    encoder.to(torch.bfloat16)
    opt = with_fp32_master_weights(torch.optim.SGD)(encoder.parameters(), lr=0.05, momentum=0.9)
    memory = CrossBatchMemory(args.mem, 16, device)
    for step in range(args.steps):
        y = torch.randint(0, 8, (32,))
        x = centers[y] + torch.randn(32, 24)
        x, y = x.to(device), y.to(device)
        emb = F.normalize(encoder(x.to(torch.bfloat16)), dim=1)
        ref = torch.cat([emb, memory.feats])
        ref_y = torch.cat([y, memory.labels])
        loss = contrastive(emb, y, ref, ref_y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        memory.enqueue(emb, y)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    print("DTYPES emb", emb.dtype, "bank", memory.feats.dtype, "ref", ref.dtype, "loss", loss.dtype)
    hit = bf16_on_xla((memory.labels >= 0).float()).mean()
    print(f"memory filled {hit.item():.2f}")


if __name__ == "__main__":
    main()
