#!/usr/bin/env bash
# Sets up, configures and builds, quietly: CMake's and Ninja's output goes to <build dir>/build.log
# and is shown only when a step fails; one line then says what was built and how long it took
# (also written to <build dir>/build-summary.txt for CI). HIPGN_VERBOSE=1 streams the output.
# Usage: scripts/build.sh [build dir] [extra CMake arguments]
# e.g. scripts/build.sh build -DHIPGN_PRESET=minimal -DHIPGN_DTYPES="f16;bf16"
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
build=${1:-build}
shift || true
mkdir -p "$build"
log=$build/build.log
kind=incremental
[ -f "$build/CMakeCache.txt" ] || kind=cold
start=$(date +%s)
configure=(cmake -S . -B "$build" -G Ninja "${HIPGN_PLATFORM_ARGS[@]}" "$@")
compile=(cmake --build "$build" -j "$(nproc)")
if [ "${HIPGN_VERBOSE:-0}" = 1 ]; then
  "${configure[@]}" 2>&1 | tee "$log"
  "${compile[@]}" 2>&1 | tee -a "$log"
else
  echo "build: $kind build in $build/ (output in $log; HIPGN_VERBOSE=1 shows it)"
  if ! "${configure[@]}" > "$log" 2>&1; then
    echo "build: configuring failed; the end of $log:"
    tail -n 40 "$log"
    exit 1
  fi
  if ! "${compile[@]}" >> "$log" 2>&1; then
    echo "build: compiling failed; the errors in $log:"
    grep -E -A12 "FAILED:" "$log" | head -n 80
    exit 1
  fi
fi
seconds=$(( $(date +%s) - start ))
# what this build holds, from the generator's manifest and its translation units
read -r instances preset < <(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["count"], m["preset"])' \
  "$build/generated/manifest.json")
units=$(find "$build/generated/tu" -name '*.cpp' | wc -l)
compiled=$(grep -c -E '^\[[0-9]+/[0-9]+\] Building .* object generated/' "$log" || true)
spills=$(grep -c "Registers are spilled" "$log" || true)
printf -v took '%d min %02d s' $((seconds / 60)) $((seconds % 60))
line="build: $instances instances ($preset preset) in $units translation units; $kind build compiled $compiled of them in $took"
[ "$spills" = 0 ] || line+="; ptxas reported $spills register spills"
echo "$line"
printf 'kind=%s seconds=%d instances=%d units=%d compiled=%d spills=%d\n' "$kind" "$seconds" "$instances" "$units" \
  "$compiled" "$spills" > "$build/build-summary.txt"
