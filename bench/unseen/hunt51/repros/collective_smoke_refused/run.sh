#!/bin/bash
export XLA_USE_BF16=1
python allreduce_check.py
