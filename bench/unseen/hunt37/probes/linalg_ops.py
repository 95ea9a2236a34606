"""Which ops raise on a bf16 operand: `python linalg_ops.py cpu` or, on the XLA CPU device, `PJRT_DEVICE=CPU python linalg_ops.py xla`."""
import torch, sys
dev = sys.argv[1] if len(sys.argv) > 1 else "cpu"
if dev == "xla":
    import torch_xla; dev = torch_xla.device()
A = torch.randn(4, 4).to(dev).to(torch.bfloat16)
v = torch.rand(64).to(dev).to(torch.bfloat16)
ops = {
 "linalg.matrix_norm ord=2": lambda: torch.linalg.matrix_norm(A, ord=2),
 "linalg.matrix_norm fro": lambda: torch.linalg.matrix_norm(A),
 "linalg.norm(A)": lambda: torch.linalg.norm(A),
 "linalg.norm(A, 2)": lambda: torch.linalg.norm(A, 2),
 "linalg.svdvals": lambda: torch.linalg.svdvals(A),
 "linalg.svd": lambda: torch.linalg.svd(A),
 "linalg.inv": lambda: torch.linalg.inv(A),
 "linalg.eigh": lambda: torch.linalg.eigh(A @ A.T),
 "linalg.eigvalsh": lambda: torch.linalg.eigvalsh(A @ A.T),
 "linalg.matrix_rank": lambda: torch.linalg.matrix_rank(A),
 "linalg.cond": lambda: torch.linalg.cond(A),
 "linalg.matrix_exp": lambda: torch.linalg.matrix_exp(A),
 "linalg.vector_norm": lambda: torch.linalg.vector_norm(v),
 "histc": lambda: torch.histc(v, bins=10, min=0, max=1),
 "median": lambda: torch.median(v),
 "kthvalue": lambda: torch.kthvalue(v, 3),
 "torch.norm p=2": lambda: torch.norm(A),
 "torch.svd_lowrank": lambda: torch.svd_lowrank(A, q=2),
 "erfinv": lambda: torch.erfinv(v * 0.5),
 "multinomial": lambda: torch.multinomial(v, 2),
 "bucketize": lambda: torch.bucketize(v, torch.linspace(0, 1, 5).to(dev).to(torch.bfloat16)),
 "searchsorted": lambda: torch.searchsorted(torch.linspace(0, 1, 5).to(dev).to(torch.bfloat16), v),
 "cumprod": lambda: torch.cumprod(v, 0),
 "logcumsumexp": lambda: torch.logcumsumexp(v, 0),
}
for k, f in ops.items():
    try:
        r = f()
        if dev != "cpu":
            import torch_xla; torch_xla.sync()
            r = r[0] if isinstance(r, tuple) else r
            r = r.cpu()
        print("OK  ", k)
    except Exception as e:
        print("FAIL", k, "|", str(e).splitlines()[0][:120])
