import torch
import torch_xla


def xla_device(*a, **k):
    return torch.device("cpu")


def mark_step(*a, **k):
    pass


def optimizer_step(opt, barrier=False, optimizer_args=None, **k):
    return opt.step(**(optimizer_args or {}))


def save(data, path, **k):
    torch.save(data, path)


def master_print(*a, **k):
    print(*a, **k)


def is_master_ordinal(*a, **k):
    return True


def xrt_world_size():
    return 1


def get_ordinal():
    return 0


def _maybe_convert_to_cpu(d, **k):
    return d


REDUCE_SUM = "sum"


# hunt30 additions
def reduce_gradients(optimizer, groups=None, pin_layout=True):
    for g in optimizer.param_groups:
        for p in g["params"]:
            assert p.grad is not None or not p.requires_grad or True


def rendezvous(tag, payload=b"", replicas=None):
    return [payload]


def add_step_closure(closure, args=(), run_async=False):
    closure(*args)


def all_reduce(reduce_type, inputs, scale=1.0, groups=None, pin_layout=True):
    if isinstance(inputs, torch.Tensor):
        return inputs * scale
    for t in inputs:
        t.mul_(scale)
    return inputs


def _to_cpu(d):
    if isinstance(d, torch.Tensor):
        return d.cpu()
    if isinstance(d, dict):
        return {k: _to_cpu(v) for k, v in d.items()}
    if isinstance(d, (list, tuple)):
        return type(d)(_to_cpu(v) for v in d)
    return d


def mesh_reduce(tag, data, reduce_fn):
    return reduce_fn([_to_cpu(data)])


REDUCE_MAX = "max"
REDUCE_MIN = "min"


def send_cpu_data_to_device(data, device, **k):
    # as the real one: a tensor comes back as a one-element list, a container as the same container
    from torch_xla.distributed.parallel_loader import _to
    return _to([data] if isinstance(data, torch.Tensor) else data, device)


def all_gather(value, dim=0, **k):
    return value
