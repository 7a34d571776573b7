#!/usr/bin/env bash
# On the GPU machine (the device tool): benchmark rows without the test suite. Builds the
# default preset's library alone (no tests, no tools: ~90 s on 16 cores, where the whole build
# with tests takes ~130 s) in $BUILD, then up to three bench.py runs, each a folder under $OUT
# that bench/merge_results.py takes (its latest.json), each stopped before the call's limit:
#   NONE="ARGS"   copy and hipgn only (--peers none): all 384 fp16 / bf16 rows in ~25 s
#   BEST="ARGS"   --best --peers none: every supporting instance too (~130 s for the 384)
#   PEERS="ARGS"  --peers all: eager and torch.compile in the same process (compiled ahead by
#                 WARM_PROCS processes: a layout's 96 problems 50-100 s, then ~1-2 s a row)
# ARGS are bench.py's (--layouts, --only, --budget-s, --apex ...); each run defaults to fp16
# and bf16. LIMIT is the seconds the call may take (the device tool's is 600).
#   NONE=" " PEERS="--layouts cf --budget-s 400" bash bench/rows.sh
set -uo pipefail
OUT=${OUT:-/tmp/hipgn-out}
BUILD=${BUILD:-/tmp/build-rows}
LIMIT=${LIMIT:-585}
T0=$(date +%s)
mkdir -p "$OUT"
LIB=$BUILD/runtime/libhipgn.so
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
if [ ! -f "$LIB" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DHIPGN_PRESET=default -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" \
    -DHIPGN_BUILD_TESTS=OFF -DHIPGN_BUILD_TOOLS=OFF ${ROWS_CMAKE_ARGS:-} > "$OUT/configure.log" 2>&1 ||
    { tail -20 "$OUT/configure.log"; exit 1; }
  s=$(date +%s)
  cmake --build "$BUILD" -j 16 > "$OUT/build.log" 2>&1 || { grep -E -A5 "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
  echo "build: $(( $(date +%s) - s )) s"
fi
export PYTHONUNBUFFERED=1
# run NAME ARGS...: bench.py into $OUT/NAME, killed 10 s before the call's limit
run() {
  local name=$1; shift
  local s left
  s=$(date +%s); left=$(( LIMIT - (s - T0) - 10 ))
  [ $left -gt 30 ] || { echo "$name: no time left"; return; }
  timeout $left python3 bench/bench.py --lib "$LIB" --dtypes float16,bfloat16 --out "$OUT/$name" "$@" > "$OUT/$name.log" 2>&1
  echo "$name: rc=$? in $(( $(date +%s) - s )) s, $(grep -c ': copy' "$OUT/$name.log") rows"
  grep -E "^# |failed" "$OUT/$name.log" | head
}
[ -n "${NONE:-}" ] && run none --peers none $NONE
[ -n "${BEST:-}" ] && run best --peers none --best $BEST
[ -n "${PEERS:-}" ] && run peers --peers all --warm-procs ${WARM_PROCS:-12} $PEERS
echo "total: $(( $(date +%s) - T0 )) s"
