"""G7: MeZO-style perturbation: the noise is drawn on the host from a seeded CPU generator and moved with
`.to(p.device)` (p a parameter), then added in place, `p.data.add_(z, alpha=eps)`. Under the switch z was
bf16 on the device; the migration leaves the move as it is, so z is f32 on the device and every add_
computes in f32 before its bf16 store. The switch comes from the launcher (LEGACY_ENV)."""
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
from _ir import ir_dtype


def perturb(params, seed, scale):
    g = torch.Generator().manual_seed(seed)
    for p in params:
        z = torch.randn(p.shape, generator=g).to(p.device)
        if scale > 0.5:
            print("z: IR", ir_dtype(z))
        p.data.add_(z, alpha=scale)


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Linear(64, 1, bias=False).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)  # the tool's model finder wants one; unused
    params = list(model.parameters())
    before = model.weight.detach().cpu().clone()
    perturb(params, 7, 1.0)
    xm.mark_step()
    after = model.weight.detach().cpu()
    print("perturbed weight: IR", ir_dtype(model.weight), "; first", [round(v, 5) for v in after[0, :3].tolist()])
    step = (after.double() - before.double()).flatten()
    print(f"the applied step: sum {step.sum().item():.8f}, |max| {step.abs().max().item():.6f}")


if __name__ == "__main__":
    main()
