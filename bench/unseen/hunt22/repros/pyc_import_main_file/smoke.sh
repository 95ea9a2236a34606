#!/bin/sh
XLA_USE_BF16=1 python run_smoke.py
