#!/usr/bin/env bash
# Profiles a few shapes of ../shared/bench/suite.json (fp16, both layouts, forward and fused
# backward, SiLU) with hipgn_profiler; full tables and CSV under $OUT, a summary on stdout:
# the copy, the heuristic's choice and the fastest instance of each problem.
set -uo pipefail
OUT=${OUT:-/tmp/hipgn-bench}
PROFILER=${PROFILER:-build-gpu/profiler/hipgn_profiler}
mkdir -p "$OUT"
shapes=("sd15_64x320 2 320 64,64 32" "sd15_16x1280 2 1280 16,16 32" "vae_256x512 1 512 256,256 32"
        "r50_56x256_n32 32 256 56,56 32")
for s in "${shapes[@]}"; do
  read -r name n c sp g <<< "$s"
  for op in fwd bwd; do
    for layout in cf cl; do
      log="$OUT/${name}_${op}_${layout}.txt"
      $PROFILER --op $op -n $n -c $c -s $sp -g $g --dtype f16 --layout $layout --act swish --iters 30 \
        --csv "$OUT/${name}_${op}_${layout}.csv" > "$log" 2>&1
      copy=$(grep '^copy:' "$log" | awk '{print $2}')
      h=$(grep -- '<- heuristic' "$log" | awk '{printf "%s %sus %s", $1, $3, $6}')
      f=$(grep -- '\* fastest' "$log" | awk '{printf "%s %sus %s", $1, $3, $6}')
      bad=$(grep -c ' NO ' "$log")
      echo "$name $op $layout copy ${copy}us | heuristic $h | fastest $f | wrong $bad"
    done
  done
done
