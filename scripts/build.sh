#!/usr/bin/env bash
# Sets up, configures and builds. Usage: scripts/build.sh [build dir] [extra CMake arguments]
# e.g. scripts/build.sh build -DHIPGN_PRESET=minimal -DHIPGN_DTYPES="f16;bf16"
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
build=${1:-build}
shift || true
cmake -S . -B "$build" -G Ninja "${HIPGN_PLATFORM_ARGS[@]}" "$@"
cmake --build "$build" -j "$(nproc)"
