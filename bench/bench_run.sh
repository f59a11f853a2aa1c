#!/usr/bin/env bash
# Benchmark: archsim run on a model and machine config, trace included. Prints wall time (whole
# command: import, SystemC simulation, HDF5 trace, reduction), simulation wall time, trace events,
# events per second, and peak memory; median of N runs.
# Usage: bench/bench_run.sh [MODEL] [CONFIG] [RUNS] [EXTRA ARCHSIM RUN ARGS...]
# Goals: resnet50 on configs/tpu/tpu_128x128_ws.toml under 2 s and >= 2 M events/s (issue 2);
# resnet50 on configs/kpu/t256.toml under 2 s (issue 3); resnet50 batch 1 on
# configs/gpu/a100_sxm4_80gb.toml under 2 s (issue 4), batch 256 reported; resnet50 batch 1 on
# configs/cpu/host.toml under 3 s (issue 5). All on the 2-core CI machine.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
model="${1:-$here/../shared/models/resnet50.onnx}"
config="${2:-$here/configs/tpu/tpu_128x128_ws.toml}"
runs="${3:-5}"
extra=("${@:4}")
bin="${ARCHSIM:-$here/build/archsim}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

walls=(); sims=(); rates=(); rss=()
for i in $(seq "$runs"); do
  /usr/bin/time -f "%e %M" -o "$out/time" "$bin" run "$model" --arch "$config" --out "$out/run" "${extra[@]}" \
      > /dev/null 2> "$out/err"
  read -r wall kb < "$out/time"
  line="$(grep 'archsim: simulated' "$out/err")"
  sim="$(sed -E 's/.* in ([0-9.]+) s wall.*/\1/' <<< "$line")"
  events="$(sed -E 's/.* wall, ([0-9]+) events.*/\1/' <<< "$line")"
  walls+=("$wall"); sims+=("$sim"); rss+=("$kb")
  rates+=("$(awk -v e="$events" -v s="$sim" 'BEGIN { printf "%.3f", e / s / 1e6 }')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "model         $(basename "$model")"
echo "config        $(basename "$config") ${extra[*]}"
echo "runs          $runs"
echo "trace events  $events"
echo "wall_s        $(median "${walls[@]}")   (whole command, median)"
echo "sim_wall_s    $(median "${sims[@]}")   (SystemC simulation + trace writing, median)"
echo "events_per_s  $(median "${rates[@]}") M"
echo "peak_rss_mib  $(awk -v k="$(median "${rss[@]}")" 'BEGIN { printf "%.1f", k / 1024 }')"
echo "trace_bytes   $(stat -c %s "$out/run/trace.h5")"
