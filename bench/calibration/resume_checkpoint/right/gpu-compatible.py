"""Fine-tune a small residual MLP classifier the way long jobs run: checkpoint, restart, resume.

Single-device PyTorch/XLA script. bf16 is switched on the old way, through XLA_DOWNCAST_BF16,
before torch is imported. The job saves model, optimizer, LR scheduler and data-order state with
`xm.save` every `--checkpoint-every` steps; `--restart-at N` emulates a preemption at step N:
everything is dropped, rebuilt from scratch and loaded from the last checkpoint, as a new
allocation of the job would do with `--resume`.
"""
import os

import argparse
import math
import tempfile

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


def clip_grad_norm_fp32_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """torch.nn.utils.clip_grad_norm_ with the gradient norm computed in FP32; returns it (FP32).

    Added by bf16-migrate (gpu-compatible mode, replacing the legacy bf16 environment switch):
    the model's gradients are bf16, and their norm computed in bf16 is about 1% off over a
    million elements. `foreach` is accepted for compatibility and not used.
    """
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    norm_type = float(norm_type)
    norms = [torch.linalg.vector_norm(g.detach().float(), norm_type) for g in grads]
    total_norm = torch.linalg.vector_norm(torch.stack([n.to(grads[0].device) for n in norms]), norm_type)
    if error_if_nonfinite and (torch.isnan(total_norm) or torch.isinf(total_norm)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be clipped.")
    clip_coef = torch.clamp(max_norm / (total_norm + 1e-6), max=1.0)
    with torch.no_grad():
        for g in grads:
            g.mul_(clip_coef.to(g.device))
    return total_norm


NUM_SAMPLES = 4096
FEATURES = 48
CLASSES = 6


class ResidualBlock(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return x + F.gelu(self.fc(self.norm(x)))


class Classifier(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.stem = nn.Linear(FEATURES, width)
        self.blocks = nn.Sequential(*[ResidualBlock(width) for _ in range(depth)])
        self.head = nn.Linear(width, CLASSES)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


def make_dataset(seed):
    """Gaussian blobs: features ~ N(centre of class, 1), labels are int64 class ids."""
    gen = torch.Generator().manual_seed(seed)
    centres = 0.35 * torch.randn(CLASSES, FEATURES, generator=gen)
    labels = torch.randint(0, CLASSES, (NUM_SAMPLES,), generator=gen)
    features = centres[labels] + torch.randn(NUM_SAMPLES, FEATURES, generator=gen)
    return features, labels


def parameter_groups(model, weight_decay):
    """Weight decay on the matrices only (the usual split: no decay for biases and norms)."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        (no_decay if param.ndim < 2 or "norm" in name else decay).append(param)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def warmup_cosine(warmup, total):
    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, total - warmup)
        return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
    return factor


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--weight-decay", type=float, default=0.05)
    parser.add_argument("--max-grad-norm", type=float, default=1.0)
    parser.add_argument("--checkpoint-every", type=int, default=4)
    parser.add_argument("--restart-at", type=int, default=8, help="emulate a preemption after this step (0: never)")
    parser.add_argument("--checkpoint-dir", default=None)
    parser.add_argument("--print-every", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def build(args, device):
    """Model, optimizer and LR scheduler, as a fresh process of the job builds them."""
    torch.manual_seed(args.seed)
    model = Classifier(args.width, args.depth).to(device)
    model.to(torch.bfloat16)
    optimizer = with_fp32_master_weights(torch.optim.AdamW)(parameter_groups(model, args.weight_decay), lr=args.lr, betas=(0.9, 0.98))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(args.steps // 10, args.steps))
    return model, optimizer, scheduler


def save_checkpoint(path, step, model, optimizer, scheduler, batch_gen):
    xm.save(
        {
            "step": step,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "data_rng": batch_gen.get_state(),
        },
        path,
    )


def resume(path, model, optimizer, scheduler, batch_gen):
    checkpoint = torch.load(path, weights_only=False)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    batch_gen.set_state(checkpoint["data_rng"])
    return checkpoint["step"]


def main():
    args = parse_args()
    device = torch_xla.device()
    checkpoint_dir = args.checkpoint_dir or tempfile.mkdtemp(prefix="resume-ckpt-")
    checkpoint_path = os.path.join(checkpoint_dir, "last.pt")

    features, labels = make_dataset(args.seed)
    model, optimizer, scheduler = build(args, device)
    batch_gen = torch.Generator().manual_seed(args.seed + 1)

    step = 0
    while step < args.steps:
        step += 1
        model.train()
        idx = torch.randint(0, NUM_SAMPLES, (args.batch_size,), generator=batch_gen)
        x = features[idx].to(device)
        y = labels[idx].to(device)

        optimizer.zero_grad(set_to_none=True)
        logits = model(x.to(torch.bfloat16))
        loss = F.cross_entropy(logits, y)
        loss.backward()
        clip_grad_norm_fp32_(model.parameters(), args.max_grad_norm)
        xm.optimizer_step(optimizer)
        scheduler.step()
        xm.mark_step()

        if step % args.print_every == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        if step % args.checkpoint_every == 0:
            save_checkpoint(checkpoint_path, step, model, optimizer, scheduler, batch_gen)
        if step == args.restart_at:
            # the allocation ends: a new process of the job rebuilds everything and resumes
            del model, optimizer, scheduler
            model, optimizer, scheduler = build(args, device)
            batch_gen = torch.Generator()
            step = resume(checkpoint_path, model, optimizer, scheduler, batch_gen)
            print(f"resumed from {checkpoint_path} at step {step}", flush=True)


if __name__ == "__main__":
    main()
