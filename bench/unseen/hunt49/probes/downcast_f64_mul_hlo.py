"""Under XLA_DOWNCAST_BF16=1 (set by the caller): what dtype does a float64 NumPy buffer hold on the device, and in
what dtype does bf16-data * that buffer compute? Prints the pending HLO."""
import numpy as np
import torch
import torch_xla
import torch_xla.core.xla_model as xm

dev = xm.xla_device()
window = torch.from_numpy(np.hanning(16)).to(dev)
x = torch.randn(4, 16).to(dev)
y = x * window
z = y.float()
print("labels", window.dtype, x.dtype, y.dtype, z.dtype)
print(torch_xla._XLAC._get_xla_tensors_hlo([window, y, z]))
