# prints what model_site.handed_to is given and finds (a debug wrapper; the package is not edited)
import sys, runpy
import bf16_migrate.python.model_site as ms
f = ms.handed_to
def wrap(ctx, models):
    r = f(ctx, models)
    print("DBG handed_to models=", [ctx.code(x) for x in models], "->", [(fn.name.value, p) for fn, p in r], file=sys.stderr)
    return r
ms.handed_to = wrap
sys.argv = ["bf16_migrate"] + sys.argv[1:]
runpy.run_module("bf16_migrate", run_name="__main__")
