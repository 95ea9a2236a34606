"""Small CNN image classifier trained with a minimal Trainer class on PyTorch/XLA.

The images are synthetic: each of the four classes has its own fixed 16x16
mean pattern, and every sample is that pattern plus Gaussian noise. Reduced
precision is requested through XLA_DOWNCAST_BF16, set in main() before the
trainer touches the XLA device.
"""
import argparse
import os

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
from torch.utils.data import DataLoader, TensorDataset


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


NUM_CLASSES = 4
IMAGE_SIZE = 16
CHANNELS = 3


class SmallCNN(nn.Module):
    def __init__(self, num_classes=NUM_CLASSES):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(CHANNELS, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.head = nn.Linear(32 * (IMAGE_SIZE // 4) ** 2, num_classes)

    def forward(self, x):
        x = self.features(x)
        return self.head(torch.flatten(x, 1))


def make_images(num_samples, seed):
    """Class-dependent mean patterns plus unit noise."""
    gen = torch.Generator().manual_seed(seed)
    patterns = torch.randn(NUM_CLASSES, CHANNELS, IMAGE_SIZE, IMAGE_SIZE, generator=gen)
    labels = torch.arange(num_samples) % NUM_CLASSES
    noise = torch.randn(num_samples, CHANNELS, IMAGE_SIZE, IMAGE_SIZE, generator=gen)
    images = 0.5 * patterns[labels] + noise
    return images, labels.long()


class Trainer:
    def __init__(self, args):
        self.args = args
        self.device = torch_xla.device()
        self.model = SmallCNN().to(self.device)
        self.model.to(torch.bfloat16)
        self.optimizer = with_fp32_master_weights(torch.optim.SGD)(self.model.parameters(), lr=args.lr, momentum=0.9)
        self.loss_fn = nn.CrossEntropyLoss()
        images, labels = make_images(args.num_samples, args.seed)
        self.loader = DataLoader(
            TensorDataset(images, labels), batch_size=args.batch_size, shuffle=True
        )

    def fit(self, steps):
        """Run `steps` optimizer steps, cycling over the loader as many epochs as needed."""
        self.model.train()
        step = 0
        epoch = 0
        while step < steps:
            epoch += 1
            for images, labels in self.loader:
                images = images.to(self.device)
                labels = labels.to(self.device)
                self.optimizer.zero_grad()
                logits = self.model(images.to(torch.bfloat16))
                loss = self.loss_fn(logits, labels)
                loss.backward()
                self.optimizer.step()
                xm.mark_step()
                step += 1
                if step % 10 == 0:
                    print(f"step {step} loss {loss.item():.4f}")
                if step >= steps:
                    break
        return epoch


def parse_args():
    parser = argparse.ArgumentParser(description="Train a small CNN on synthetic images")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--lr", type=float, default=0.03)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-samples", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main():
    args = parse_args()
    os.environ.update({"OMP_NUM_THREADS": "1"})
    torch.manual_seed(args.seed)
    trainer = Trainer(args)
    trainer.fit(args.steps)


if __name__ == "__main__":
    main()
