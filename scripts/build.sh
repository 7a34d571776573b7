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
# CPU time of everything this script ran (the compilers): next to the wall time, it shows how
# much of that time another load on the machine took (2 idle cores: wall = cpu / 2 at best)
times > "$build/.times"
cpu=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); n += t[1] * 60 + t[2] } printf "%d", n }' \
  "$build/.times")
rm -f "$build/.times"
# what this build holds, from the generator's manifest and its translation units
read -r instances preset < <(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["count"], m["preset"])' \
  "$build/generated/manifest.json")
units=$(find "$build/generated/tu" -name '*.cpp' | wc -l)
compiled=$(grep -c -E '^\[[0-9]+/[0-9]+\] Building .* object generated/.*/tu/' "$log" || true)
objects=$(grep -c -E '^\[[0-9]+/[0-9]+\] Building ' "$log" || true)
spills=$(grep -c "Registers are spilled" "$log" || true)
printf -v took '%d min %02d s' $((seconds / 60)) $((seconds % 60))
line="build: $instances instances ($preset preset) in $units translation units; $kind build compiled $compiled of them"
line+=" in $took ($((cpu / 60)) min $((cpu % 60)) s of CPU on $(nproc) cores)"
[ "$spills" = 0 ] || line+="; ptxas reported $spills register spills"
echo "$line"
printf 'kind=%s seconds=%d cpu_seconds=%d cores=%d instances=%d units=%d compiled=%d objects=%d spills=%d\n' "$kind" \
  "$seconds" "$cpu" "$(nproc)" "$instances" "$units" "$compiled" "$objects" "$spills" > "$build/build-summary.txt"
