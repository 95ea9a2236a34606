"""ringcls: classify points by which ring they lie on."""
__all__ = ["model", "data"]
