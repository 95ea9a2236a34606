"""A trainer whose optimizer comes from a framework factory (no `model.parameters()` here): bf16-migrate keeps
its switch. It prints what precision the legacy switches give this run."""
import os

use = os.environ.get("XLA_USE_BF16", "0") == "1"
down = os.environ.get("XLA_DOWNCAST_BF16", "0") == "1"
# torch-xla: XLA_USE_BF16 wins over XLA_DOWNCAST_BF16 (f64 becomes bf16 too, not f32)
print("float64 on device ->", "bf16" if use else ("f32" if down else "f64"))
