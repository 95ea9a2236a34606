from . import syncfree  # noqa: F401
