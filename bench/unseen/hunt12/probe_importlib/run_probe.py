"""Entry point of the activation probe: sets the runtime, then imports the probe module and runs it.

(The probe module is imported only after the environment is final: torch_xla reads it at import.)
"""
import importlib
import os
import sys

os.environ["XLA_USE_BF16"] = "1"

if __name__ == "__main__":
    probe = importlib.import_module("activation_probe")
    sys.exit(probe.main(sys.argv[1:]))
