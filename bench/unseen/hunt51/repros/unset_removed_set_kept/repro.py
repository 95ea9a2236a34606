"""Use the plugin, tear it down, then start a child process (a later fp32 job, an evaluation worker):
the child must not inherit the bf16 switch."""
import subprocess
import sys

from precision import XLABf16Precision

plugin = XLABf16Precision("bf16-true")
plugin.teardown()
child = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('XLA_USE_BF16'))"],
                       capture_output=True, text=True)
print("child sees XLA_USE_BF16 =", child.stdout.strip())
