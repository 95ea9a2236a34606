import os, sys
import bf16_migrate.python.device_tensors as dt
for name in ["_cast_where_used", "_computed_here", "_computed_uncast", "_computed_in_callee", "_returned", "_unknown_arrival"]:
    f = getattr(dt, name)
    def wrap(*a, _f=f, _n=name):
        r = _f(*a)
        call = a[-1] if _n != "_cast_where_used" else a[2]
        try:
            code = a[0].code(call)
        except Exception:
            code = "?"
        if os.environ.get("DBG_MATCH", "keep") in code:
            print("DBG", _n, code, "->", r, file=sys.stderr)
        return r
    setattr(dt, name, wrap)
from bf16_migrate.__main__ import *  # noqa
import runpy
sys.argv = ["bf16_migrate"] + sys.argv[1:]
runpy.run_module("bf16_migrate", run_name="__main__")
