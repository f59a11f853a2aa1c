#!/usr/bin/env bash
# Benchmark: `archsim sweep` throughput. Builds a 200-point study (ResNet-18 on the A100 config:
# 10 SM counts x 5 batches x 2 precisions x 2 L2 sizes), runs it with --traces none on 1 and on 2
# jobs, and prints points per second and the speedup. Goal (issue 6): at least 1.8x from 2 jobs
# on the 2-core CI machine.
# Usage: bench/bench_sweep.sh [ARCHSIM]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$here/build/archsim}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat > "$work/study.toml" <<TOML
name = "bench_200"
models = ["$here/workloads/models/resnet18.onnx"]
[axes]
sms = [8, 16, 24, 32, 48, 64, 80, 96, 108, 128]
batch = [1, 2, 4, 8, 16]
precision = ["fp16", "int8"]
"l2.mib" = [20, 40]
[[machine]]
label = "a100"
config = "$here/configs/gpu/a100_sxm4_80gb.toml"
TOML
declare -A rate
for jobs in 1 2; do
  start=$(date +%s.%N)
  "$bin" sweep "$work/study.toml" --out "$work/j$jobs" --jobs "$jobs" --traces none 2> "$work/log$jobs"
  end=$(date +%s.%N)
  points=$(( $(wc -l < "$work/j$jobs/results.csv") - 1 ))
  rate[$jobs]=$(awk -v p="$points" -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", p / (e - s) }')
  printf 'jobs %d: %d points in %.1f s, %s points/s\n' "$jobs" "$points" "$(awk -v s="$start" -v e="$end" 'BEGIN { print e - s }')" "${rate[$jobs]}"
done
cmp -s "$work/j1/results.csv" "$work/j2/results.csv" && echo "results identical for 1 and 2 jobs" || echo "RESULTS DIFFER between 1 and 2 jobs"
awk -v a="${rate[1]}" -v b="${rate[2]}" 'BEGIN { printf "speedup from 2 jobs: %.2fx (goal >= 1.8x)\n", b / a }'
