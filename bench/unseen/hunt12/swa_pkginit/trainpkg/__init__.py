"""trainpkg: the tabular classifier used by the nightly TPU job (`python -m trainpkg.train`).

Importing the package sets the runtime flags every entry point expects, before torch_xla loads.
"""
import os

os.environ.setdefault("PJRT_DEVICE", "TPU")
os.environ.setdefault("XLA_USE_BF16", "1")

__version__ = "0.4.1"
