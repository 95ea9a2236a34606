#!/bin/bash
export XLA_DOWNCAST_BF16=1
python repro.py
