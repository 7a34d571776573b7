#!/usr/bin/env bash
# On the GPU machine: builds bench/small_fwd_probe.cu as a shared library (with hipgn's kernel:
# BUILD, a build folder of this tree that has gn_fwd_f16_f16_cf_swish_onchip_b128_v8_e1, default
# build-gpu) and times it with bench/small_fwd_probe.py beside hipgn (that build's library;
# INSTANCES: more instances to time) and torch.compile.
set -euo pipefail
cd "$(dirname "$0")/.."
B=$(realpath "${BUILD:-build-gpu}")
nvcc -O3 -DNDEBUG -std=c++17 -arch=sm_90 -shared -Xcompiler -fPIC -DHIPGN_KERNEL -Ikernels/include -Iruntime/include \
  -Iabi/include -Iapi/include -I"$B/vocabulary/internal" -I"$B/vocabulary/include" \
  bench/small_fwd_probe.cu -o /tmp/small_fwd_probe.so
python3 bench/small_fwd_probe.py --lib "$B/runtime/libhipgn.so" --probe /tmp/small_fwd_probe.so --instances "${INSTANCES:-}"
