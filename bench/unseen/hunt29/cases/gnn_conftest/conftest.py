import os

# the smoke test runs the trainer as it runs on the TPU pod: bf16 on the device
os.environ.setdefault("PJRT_DEVICE", "CPU")
os.environ["XLA_USE_BF16"] = "1"
