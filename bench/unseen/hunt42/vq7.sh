#!/bin/bash
# amp hand texts added at the end: autocast around part of the training step (wrong), one block (right)
cd "$(dirname "$0")"
./against.sh dino.teacher_outside amp dino_center train_dino.py dino.teacher_outside.amp.py
./against.sh dino.one_block amp dino_center train_dino.py dino.one_block.amp.py
