"""Linear-probe fine-tuning of a frozen conv backbone (pretrained weights from backbone.pt, made here when absent).
Random-crop augmentation on the host; per-epoch evaluation writes results.json; all output through logging."""
import json
import logging
import os
import random
import sys

os.environ.update(NEURON_RT_STOCHASTIC_ROUNDING_EN="1")

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


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


def host_float32(data, back_to_device=False):
    """Return `data` with every bf16 tensor in it copied to the host and made float32 there (and,
    with `back_to_device`, moved back to the device it was on); integer, float32 and float64
    tensors and everything else but modules are returned as they are.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor that left the XLA device was float32): `data` is a tensor, or a list, tuple,
    namedtuple or dict of them (a state dict, a checkpoint), nested; containers are copied with
    their type, a state dict's metadata kept, so `load_state_dict` reads the result as before.
    `torch.save` writes an XLA tensor as one: `back_to_device=True` keeps it so, as the legacy
    checkpoint held it. A module is copied, its bf16 parameters and buffers made float32 where they
    are, without the input hooks bf16-migrate registered on it (functions of the migrated script,
    which a `torch.save`d module would need to be loaded anywhere else).
    """
    import copy

    if isinstance(data, torch.nn.Module):
        module = copy.deepcopy(data)
        for sub in module.modules():
            for key, hook in list(sub._forward_pre_hooks.items()):
                if getattr(hook, "__name__", None) in ("bf16_inputs_hook", "float32_inputs_hook"):
                    del sub._forward_pre_hooks[key]
                    sub._forward_pre_hooks_with_kwargs.pop(key, None)
        return module._apply(lambda t: t.float() if t.dtype == torch.bfloat16 else t)
    if isinstance(data, torch.Tensor):
        if data.dtype != torch.bfloat16:
            return data
        host = data.cpu().float()
        return host.to(data.device) if back_to_device else host
    if isinstance(data, dict):
        out = copy.copy(data)
        for key, value in data.items():
            out[key] = host_float32(value, back_to_device)
        return out
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(host_float32(value, back_to_device) for value in data))
    if isinstance(data, (list, tuple)):
        return type(data)(host_float32(value, back_to_device) for value in data)
    return data


logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
log = logging.getLogger(__name__)
OUT = os.environ.get("OUT_DIR", "/tmp/probe_run")
STEPS_PER_EPOCH = int(os.environ.get("STEPS", 8))
EPOCHS = 2


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, padding=1)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        return F.adaptive_avg_pool2d(F.relu(self.c2(x)), 1).flatten(1)


def pretrained_backbone(path):
    if not os.path.exists(path):
        torch.manual_seed(123)
        torch.save(Backbone().state_dict(), path)
    bb = Backbone()
    bb.load_state_dict(torch.load(path))
    return bb


def sample(rng, n):
    imgs = rng.standard_normal((n, 1, 14, 14)).astype(np.float32)
    labels = rng.integers(0, 3, size=n)
    for i, lab in enumerate(labels):
        imgs[i, 0, lab * 4:lab * 4 + 4, :] += 1.5
    return imgs, labels


def random_crop(imgs, size=12):
    out = np.empty((len(imgs), 1, size, size), np.float32)
    for i, im in enumerate(imgs):
        dy, dx = random.randint(0, 2), random.randint(0, 2)
        out[i] = im[:, dy:dy + size, dx:dx + size]
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    random.seed(0)
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    dev = xm.xla_device()
    backbone = pretrained_backbone(os.path.join(OUT, "backbone.pt")).to(dev).eval()
    for p in backbone.parameters():
        p.requires_grad_(False)
    head = nn.Sequential(nn.Dropout(0.2), nn.Linear(16, 3)).to(dev)
    head.to(torch.bfloat16)
    head.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    opt = torch.optim.SGD(head.parameters(), lr=0.2, momentum=0.9)
    results = []
    for epoch in range(EPOCHS):
        for step in range(STEPS_PER_EPOCH):
            x, y = sample(rng, 32)
            x = torch.from_numpy(random_crop(x)).to(dev)
            y = torch.from_numpy(y).to(dev)
            with torch.no_grad():
                feats = backbone(x)
            loss = F.cross_entropy(head(feats), floating_to_bf16(y), label_smoothing=0.05)
            opt.zero_grad()
            loss.backward()
            opt.step()
            xm.mark_step()
            log.info("epoch %d step %d loss %.4f", epoch, step, loss.item())
        head.eval()
        conf = torch.zeros(3, 3)
        with torch.no_grad():
            vx, vy = sample(np.random.default_rng(7), 96)
            logits = head(backbone(torch.from_numpy(vx[:, :, 1:13, 1:13]).to(dev)))
            prob = logits.softmax(-1).cpu().float()
            for t, pr in zip(vy, prob.argmax(1).tolist()):
                conf[t, pr] += 1
        head.train()
        results.append({"epoch": epoch, "acc": float(conf.diag().sum() / conf.sum()),
                        "conf": conf.tolist(), "mean_p": prob.max(1).values.mean().item()})
        log.info("epoch %d %s", epoch, results[-1])
    with open(os.path.join(OUT, "results.json"), "w") as f:
        json.dump(results, f)
    torch.save(host_float32(head.state_dict(), back_to_device=True), os.path.join(OUT, "head.pt"))
    log.info("DTYPES %s", head[1].weight.dtype)
    return 0


if __name__ == "__main__":
    sys.exit(main())
