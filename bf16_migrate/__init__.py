"""bf16-migrate: migrate PyTorch/XLA training code off the legacy bf16 environment switches.

The command line is :mod:`bf16_migrate.cli`; the Python API of the codemod is
``from bf16_migrate.python import migrate_source``, and of a whole tree
``from bf16_migrate.project import migrate_paths``.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("bf16-migrate")
except PackageNotFoundError:  # pragma: no cover - run from a source tree that is not installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
