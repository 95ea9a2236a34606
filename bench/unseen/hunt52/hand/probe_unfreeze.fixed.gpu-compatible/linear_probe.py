"""Linear probe on cached frozen features, then unfreeze the backbone with a lower LR and fine-tune end to end."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from backbone import load_pretrained


def floating_to_bf16(batch):
    """Cast the floating-point tensors in `batch` to torch.bfloat16, leaving integer tensors
    (token ids, labels) and everything else as they are.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor on the XLA device was bf16): `batch` is a tensor, or a list, tuple,
    namedtuple or dict of them, nested; containers are rebuilt, dicts as plain dicts.
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(torch.bfloat16) if batch.is_floating_point() else batch
    if isinstance(batch, dict):
        return {key: floating_to_bf16(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(floating_to_bf16(value) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(floating_to_bf16(value) for value in batch)
    return batch


def bf16_inputs_hook(module, args, kwargs):
    """Forward pre-hook added by bf16-migrate: the model's floating inputs become bf16."""
    return floating_to_bf16(args), floating_to_bf16(kwargs)


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
                    state = self.state.get(param, {})
                    for key, value in state.items():
                        # state made from the bf16 weights before the first step (Adagrad's sum): FP32 too
                        if torch.is_tensor(value) and value.is_floating_point() and value.shape == param.shape:
                            state[key] = value.float()
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


STEPS = int(os.environ.get("STEPS", 24))
UNFREEZE_AT = int(os.environ.get("UNFREEZE_AT", STEPS // 2))
BS = 16


def main():
    dev = xm.xla_device()
    rng = np.random.default_rng(0)
    images = torch.from_numpy(rng.standard_normal((64, 3, 12, 12)).astype(np.float32))
    labels = torch.from_numpy(rng.integers(0, 5, 64))

    backbone = load_pretrained().to(dev)
    backbone.to(torch.bfloat16)  # hand fix: the frozen backbone was bf16 in the legacy run
    backbone.requires_grad_(False)
    backbone.eval()

    # features computed once, kept on the device, reused every epoch
    cached = []
    with torch.no_grad():
        for i in range(0, len(images), BS):
            cached.append(backbone(images[i:i + BS].to(dev, dtype=torch.bfloat16)))
    xm.mark_step()
    cached_y = [labels[i:i + BS].to(dev) for i in range(0, len(labels), BS)]

    head = nn.Linear(backbone.out_dim, 5).to(dev)
    head.to(torch.bfloat16)
    head.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    opt = with_fp32_master_weights(torch.optim.SGD)(head.parameters(), lr=0.1, momentum=0.9)

    for step in range(STEPS):
        b = step % len(cached)
        if step < UNFREEZE_AT:
            feats = cached[b]
        else:
            if step == UNFREEZE_AT:
                backbone.requires_grad_(True)
                backbone.train()
                opt.add_param_group({"params": backbone.parameters(), "lr": 0.01})
                print("unfroze backbone at", step)
            feats = backbone(images[b * BS:(b + 1) * BS].to(dev, dtype=torch.bfloat16))
        loss = F.cross_entropy(head(feats), floating_to_bf16(cached_y[b]))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")

    with torch.no_grad():
        probs = torch.cat([head(f).softmax(-1) for f in cached]).cpu().float().numpy()
    print("MASTER", len(getattr(opt, "fp32_master_weights", {})), [g["lr"] for g in opt.param_groups])
    print("DTYPES", cached[0].dtype, head.weight.dtype, next(backbone.parameters()).dtype, probs.dtype)
    print("mean max prob", float(probs.max(1).mean()))


if __name__ == "__main__":
    main()
