#!/usr/bin/env bash
# Sets up, builds (default preset) and runs every test: the generator's Python tests and the
# C++ tests (GPU tests skip, saying why, where there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh build
ctest --test-dir build --output-on-failure -j "$(nproc)"
