import os, sys, runpy
import bf16_migrate.python.device_tensors as dt
f = dt._uses
def wrap(ctx, call):
    r = f(ctx, call)
    if os.environ.get("DBG_MATCH", "keep_scores") in ctx.code(call):
        print("DBG _uses", ctx.code(call), "->", [(ctx.pos(u)[0], ctx.code(ctx.parent(u))[:40]) for u in r], file=sys.stderr)
    return r
dt._uses = wrap
sys.argv = ["bf16_migrate"] + sys.argv[1:]
runpy.run_module("bf16_migrate", run_name="__main__")
