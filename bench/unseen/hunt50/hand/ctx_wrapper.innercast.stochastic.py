"""Text-ish classifier wrapped for temperature scaling; forwards run inside an ExitStack of contexts."""

import contextlib
import os

os.environ.update(NEURON_RT_STOCHASTIC_ROUNDING_EN="1", PJRT_DEVICE=os.environ.get("PJRT_DEVICE", "TPU"))

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


class Encoder(nn.Module):
    def __init__(self, vocab=64, dim=32, n_classes=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.mix = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, n_classes)

    def forward(self, tokens, mask):
        h = self.emb(tokens) * mask.unsqueeze(-1)
        h = F.gelu(self.mix(h)).sum(1) / mask.sum(1, keepdim=True).clamp_min(1.0)
        return self.out(h)


class Wrapper(nn.Module):
    """Adds a learnt temperature in front of any classifier."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.log_t = nn.Parameter(torch.zeros(()))

    def forward(self, *args, **kwargs):
        return self.inner(*args, **kwargs) / self.log_t.exp()


@contextlib.contextmanager
def maybe_no_grad(enabled):
    if enabled:
        with torch.no_grad():
            yield
    else:
        yield


class Evaluator:
    def __init__(self, model, device):
        self.model = model
        self.device = device

    @torch.no_grad()
    def run(self, batches):
        self.model.eval()
        nll, correct, count = 0.0, 0, 0
        for tokens, mask, labels in batches:
            tokens, mask, labels = tokens.to(self.device), mask.to(self.device, dtype=torch.bfloat16), labels.to(self.device)
            logits = self.model(tokens, mask)
            nll += F.cross_entropy(logits, labels, reduction="sum").item()
            correct += (logits.argmax(-1) == labels).sum().item()
            count += labels.numel()
        self.model.train()
        return nll / count, correct / count


def make_batch(g, n=16, length=10, vocab=64):
    tokens = torch.randint(0, vocab, (n, length), generator=g)
    lens = torch.randint(3, length + 1, (n,), generator=g)
    mask = (torch.arange(length)[None, :] < lens[:, None]).float()
    labels = (tokens[:, 0] % 4)
    return tokens, mask, labels


def main():
    steps = int(os.environ.get("STEPS", "20"))
    dev = xm.xla_device()
    model = Wrapper(Encoder()).to(dev)
    model.inner.to(torch.bfloat16)
    model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    val = [make_batch(g) for _ in range(3)]
    for step in range(steps):
        tokens, mask, labels = (floating_to_bf16(t.to(dev)) for t in make_batch(g))
        with contextlib.ExitStack() as stack:
            stack.enter_context(torch.autograd.profiler.record_function("forward"))
            stack.enter_context(maybe_no_grad(False))
            logits = model(tokens, mask=mask)
            loss = F.cross_entropy(logits, floating_to_bf16(labels))
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f} T {model.log_t.exp().item():.3f}")
    nll, acc = Evaluator(model, dev).run(val)
    print(f"val nll {nll:.4f} acc {acc:.3f}")
    print("DTYPES", model.log_t.dtype, next(model.inner.parameters()).dtype, logits.dtype)


if __name__ == "__main__":
    main()
