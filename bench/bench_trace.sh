#!/usr/bin/env bash
# Benchmark: trace inspection on a large trace. Simulates ResNet-50 at batch 3 on the 32x32
# weight-stationary array (64-byte DRAM transactions: over 20 M events), then prints the wall time
# and peak memory of `trace summary`, `trace ops`, `trace export` (all events) and `trace export
# --max-events 1000000`. Goals (issue 7): memory flat (< 200 MB), summary in seconds.
# Usage: bench/bench_trace.sh [MODEL] [CONFIG] [BATCH]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
model="${1:-$here/../shared/models/resnet50.onnx}"
config="${2:-$here/configs/tpu/tpu_32x32_ws.toml}"
batch="${3:-3}"
bin="${ARCHSIM:-$here/build/archsim}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

/usr/bin/time -f "%e %M" -o "$work/t" "$bin" run "$model" --arch "$config" --batch "$batch" --out "$work/run" --format csv \
    > /dev/null 2> "$work/err"
read -r wall kb < "$work/t"
events="$(grep -o '[0-9]* events' "$work/err" | head -1)"
printf '%-34s %8.2f s %8.1f MiB   (%s, trace %s)\n' "simulate (run)" "$wall" "$(awk -v k="$kb" 'BEGIN { print k / 1024 }')" \
    "$events" "$(du -h "$work/run/trace.h5" | cut -f1)"
measure() {  # label, archsim args...
  local label="$1"; shift
  /usr/bin/time -f "%e %M" -o "$work/t" "$bin" "$@" > /dev/null 2> "$work/err" || { cat "$work/err"; exit 1; }
  read -r wall kb < "$work/t"
  printf '%-34s %8.2f s %8.1f MiB\n' "$label" "$wall" "$(awk -v k="$kb" 'BEGIN { print k / 1024 }')"
}
measure "trace summary" trace summary "$work/run/trace.h5"
measure "trace ops" trace ops "$work/run/trace.h5"
measure "trace export (all events)" trace export "$work/run/trace.h5" --perfetto "$work/all.json.gz"
measure "trace export --max-events 1000000" trace export "$work/run/trace.h5" --perfetto "$work/cap.json.gz" --max-events 1000000
printf 'export sizes: all %s, capped %s\n' "$(du -h "$work/all.json.gz" | cut -f1)" "$(du -h "$work/cap.json.gz" | cut -f1)"
