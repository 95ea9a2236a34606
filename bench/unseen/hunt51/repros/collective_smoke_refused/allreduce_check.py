"""A collective smoke test (no model): each rank all-reduces a tensor of ones and checks the sum on the host.
Written for hunt51 in the shape of aws-neuron-samples' aws-batch all-reduce check; launched by run.sh."""
import os

import torch
import torch_xla
import torch_xla.core.xla_model as xm

dev = torch_xla.device()
ones = torch.ones((2, 3)).to(dev)
total = xm.all_reduce(xm.REDUCE_SUM, ones)
xm.mark_step()
host = total.cpu()
expected = torch.ones((2, 3)) * int(os.environ.get("WORLD_SIZE", "1"))
assert torch.all(host == expected), f"{host} != {expected}"
print("all-reduce ok", host.dtype)
