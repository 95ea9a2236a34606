"""autocast's weight cache inside one region: an in-place change of the weights between two forward
passes is not seen by the second (its bf16 copy of the weights is the first's). Run on the CPU:
`python probe_autocast_cache.py` prints whether the second forward equals the first (it does).

Why it matters (mezo_jenkins amp): the migration wraps `loss_plus = ...; perturb(...); loss_minus = ...`
in one `torch.autocast` block, so loss_minus is computed with the +eps weights and the projected
gradient is 0. The cache lives until the outermost autocast region exits (torch.amp docs).
"""

import torch

torch.manual_seed(0)
lin = torch.nn.Linear(8, 4)
x = torch.randn(2, 8)
with torch.no_grad():
    with torch.autocast("cpu", dtype=torch.bfloat16):
        first = lin(x)
        lin.weight.data.add_(1.0)
        second = lin(x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        fresh = lin(x)
print("inside one region the second forward equals the first:", torch.equal(first, second))
print("a region of its own sees the change:", not torch.equal(first, fresh))
