#!/usr/bin/env bash
# On the GPU machine: builds and runs bench/read_probe.cu (how fast a read-only kernel reads,
# L2-cold in graph replay, against a copy; see the probe's header). Needs nvcc (sm_90).
set -euo pipefail
cd "$(dirname "$0")/.."
nvcc -O3 -std=c++17 -arch=sm_90 bench/read_probe.cu -o /tmp/read_probe
/tmp/read_probe
