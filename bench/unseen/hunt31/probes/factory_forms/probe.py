import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

device = xm.xla_device()
model = nn.Linear(4, 3).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
y = torch.randint(0, 3, (8,)).to(device)
ids = torch.randint(0, 5, (8, 6)).to(device)
torch.save({"t": torch.tensor(2.0), "v": torch.ones(3)}, "/tmp/h31ff.pt")
f = {}
f["a_inf"] = torch.tensor(float("inf"), device=device)
f["b_scalar"] = torch.tensor(1.5, device=device)
f["c_arange_float"] = torch.arange(0.0, 1.0, 0.25, device=device)
f["d_ones_like_mask"] = torch.ones_like(ids, dtype=torch.float)
f["e_new_zeros"] = ids.new_zeros(8, dtype=torch.float)
f["f_FloatTensor"] = torch.FloatTensor([0.2, 0.8]).to(device)
f["g_empty_uniform"] = torch.empty(4, device=device).uniform_()
f["h_maploc"] = torch.load("/tmp/h31ff.pt", map_location=device)["v"]
f["i_tril"] = torch.tril(torch.ones(4, 4, device=device))
f["j_mask_mean"] = (ids != 0).sum(-1) / ids.shape[-1]
f["k_normal"] = torch.distributions.Normal(torch.zeros(3, device=device), 1.0).sample()
f["l_full_like_f"] = torch.full_like(ids, 0.5, dtype=torch.float32)
f["m_ids_float_mul"] = ids * 0.5
f["n_from_np32"] = torch.from_numpy(np.ones(3, np.float32)).to(device)
f["o_zeros_new"] = y.new_zeros(8).float()
f["p_logspace"] = torch.logspace(-3, 0, 4, device=device)
f["q_ones_dtype_default"] = torch.ones(3, device=device, dtype=torch.get_default_dtype())
f["r_scalar_tensor"] = torch.scalar_tensor(0.5, device=device)
f["s_as_tensor_list"] = torch.as_tensor([0.1, 0.2], device=device)
f["t_randn_like_ids"] = torch.randn_like(ids, dtype=torch.float)
f["u_one_hot_type"] = F.one_hot(y, 3).type(torch.FloatTensor).to(device)
f["v_eye_index"] = torch.eye(3, device=device)[y]
f["w_cumsum_ids"] = ids.cumsum(-1) / 2
f["x_div_true"] = torch.true_divide(ids, 3)
f["y_mean_float"] = ids.float().mean()
f["z_mul_mask_int"] = ids.masked_fill(ids == 0, -1).float()
f["za_empty_fill"] = torch.empty(3, device=device).fill_(float("-inf"))
f["zb_clamp_log"] = torch.rand(3, device=device).clamp(min=1e-6).log()
f["zc_double"] = torch.randn(3, device=device).double()
f["zd_sigmoid_ids"] = torch.sigmoid(ids.float())
f["ze_tensor_np"] = torch.tensor(np.array([0.5, 1.5]), device=device)
f["zf_hann"] = torch.hann_window(8, device=device)
for k, v in f.items():
    print(k, v.dtype)
