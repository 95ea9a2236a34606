#!/bin/sh
# run the trainer in the project image with the TPU settings of xla.env
docker run --rm --privileged --env-file "$(dirname "$0")/xla.env" -v "$PWD":/w -w /w spirals:latest python3 train.py
