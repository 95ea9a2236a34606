#!/bin/sh
XLA_USE_BF16=1 python -c "import train; train.main(steps=5)"
