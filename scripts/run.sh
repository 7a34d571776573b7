#!/usr/bin/env bash
# Sets up, builds and runs the main job: the profiler on Stable Diffusion's GroupNorm+SiLU
# (N=2, C=320, 64x64, G=32, fp16, channels-last): every supporting instance verified and timed
# next to a device copy, or, without a GPU, the instances and the heuristic's choice.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh build
build/profiler/hipgn_profiler "$@"
