from .wide_deep import WideAndDeep, build_model

__all__ = ["WideAndDeep", "build_model"]
