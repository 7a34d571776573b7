#!/usr/bin/env bash
# On the GPU machine: builds and runs bench/held_probe.cu (the channels-first forward as a sweep of
# tiles held in shared memory a step apart, no grid-wide wait). Needs nvcc (sm_90).
set -euo pipefail
cd "$(dirname "$0")/.."
nvcc -O3 -std=c++17 -arch=sm_90 -Xptxas -warn-spills bench/held_probe.cu -o /tmp/held_probe
/tmp/held_probe
