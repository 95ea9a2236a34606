# Runtime settings of the GAN training job. Sourced by launch.sh.
export PJRT_DEVICE=TPU
export XLA_DOWNCAST_BF16=1
export XLA_IR_DEBUG=0
