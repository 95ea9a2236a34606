"""CPU-eager probe: masked_fill of a bf16 tensor with torch.finfo(torch.float32).min (masked_attn_infer:25 after
migration). Raises on CPU (and CUDA) eager; the same pattern ran on the XLA device in hunt27 (decode.own PASS)."""
import torch

att = torch.zeros(2, 3, dtype=torch.bfloat16)
pad = torch.tensor([[False, True, True], [False, False, True]])
for value in (torch.finfo(torch.float32).min, torch.finfo(att.dtype).min, float("-inf")):
    try:
        print(value, att.masked_fill(pad, value).softmax(-1).tolist())
    except RuntimeError as e:
        print(value, "RuntimeError:", e)
