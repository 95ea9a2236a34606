"""Without any switch: the IR dtype of torch.logspace/linspace made with dtype=torch.bfloat16 on the XLA
device, and of what an op on it returns (torch-xla 2.9; hunt10 G1 found linspace's to be f32)."""
import torch
import torch_xla
X = torch_xla._XLAC

d = torch_xla.device()


def ir_dtype(t):
    text = X._get_xla_tensors_text([t])
    root = [l for l in text.splitlines() if "ROOT" in l or l.strip().startswith("%")][-1]
    return root.split("=")[1].split("[")[0].strip()


for name, mk in {
    "logspace(dtype=bf16)": lambda: torch.logspace(0.3, -1.0, 12, device=d, dtype=torch.bfloat16),
    "logspace().to(bf16)": lambda: torch.logspace(0.3, -1.0, 12, device=d).to(torch.bfloat16),
    "linspace(dtype=bf16)": lambda: torch.linspace(0.3, -1.0, 12, device=d, dtype=torch.bfloat16),
}.items():
    t = mk()
    w = torch.randn(4, 4, device=d, dtype=torch.bfloat16)
    q = w / t[3]
    e = torch.exp(t)
    print(f"{name:24s} says {t.dtype}; IR {ir_dtype(t)}; w/t[3] says {q.dtype} IR {ir_dtype(q)}; exp IR {ir_dtype(e)}")
