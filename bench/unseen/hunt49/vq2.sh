#!/bin/bash
# the second batch of device runs (repros, then two cases), each waiting on /tmp/bfm-xla.lock
cd "$(dirname "$0")"
./vrepro.sh numpy_points_helper_first stochastic
./vrepro.sh cdist_in_imported_module stochastic
./vrepro.sh downcast_f64_buffer_sibling stochastic
./vrepro.sh downcast_f64_buffer_sibling amp
./vqueue.sh pointcloud_ae pointcloud_ae train_pc.py amp --legacy-env XLA_USE_BF16=1
./vqueue.sh metric_triplet metric_triplet train_metric.py stochastic
