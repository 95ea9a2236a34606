"""bf16-migrate: migrate PyTorch/XLA training code off the legacy bf16 environment switches.

The command line is :mod:`bf16_migrate.cli`; the Python API of the codemod is
``from bf16_migrate.python import migrate_source``, and of a whole tree
``from bf16_migrate.project import migrate_paths``.
"""


def __getattr__(name: str):
    # ``__version__`` is read from the installed metadata when first asked for (PEP 562, a
    # module's ``__getattr__``): importlib.metadata costs a fifth of a clean run's start-up
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("bf16-migrate")
        except PackageNotFoundError:  # pragma: no cover - run from a source tree that is not installed
            value = "0+unknown"
        globals()["__version__"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["__version__"]
