"""Runtime settings shared by the training and export scripts of the sensor model."""
FEATURES = 6
HIDDEN = 48
MAX_LEN = 40
BATCH = 32
LR = 3e-3

# applied to os.environ by each entry point before torch_xla is touched
RUNTIME_ENV = {
    "XLA_USE_BF16": "1",
    "XLA_TENSOR_ALLOCATOR_MAXSIZE": "1000000000",
}
