#!/usr/bin/env bash
# Sets up, builds (default preset, quietly: scripts/build.sh) and runs every test: the
# generator's Python tests, the C++ tests and the profiler's command line (GPU tests skip,
# saying why, where there is no GPU). ctest's output goes to build/ctest.log; a summary
# (scripts/test_summary.py) says what ran, what was skipped and why, and shows each failure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh build
echo "test: running ctest in build/ (output in build/ctest.log)"
rc=0
ctest --test-dir build --output-on-failure -j "$(nproc)" --output-junit ctest.xml > build/ctest.log 2>&1 || rc=$?
echo
python3 scripts/test_summary.py build/ctest.xml build/ctest.log || { [ "$rc" != 0 ] || rc=1; }
exit "$rc"
