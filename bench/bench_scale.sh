#!/usr/bin/env bash
# Benchmark: issue 15's speed goals, each as wall (and CPU) seconds of a whole `archsim` command
# against its goal, on this machine. Prints one row per goal: what ran, seconds, goal, met or not.
#   - Llama-2-7B 512 + 128 tokens (workloads/llm_presets.toml#llama2_7b: prefill and four decode
#     steps, each a child run) on tpu_128x128_ws, kpu t256, kpu t768, the A100 and host.toml: <= 10 s
#   - a Llama-2-70B-shaped prefill of 4,096 tokens on kpu t768: <= 30 s
#   - BERT-Large at batch 128 (bench/scale_workloads.toml#bert_large) on each machine kind: <= 2 s,
#     the CPU <= 3 s (issue 43's goals)
#   - ResNet-50 at batch 1 on each machine kind: <= 1 s
#   - SCALE-Sim's ResNet-18 topology, 128x128 output stationary, ideal DRAM: <= 0.13 s of CPU
#     (SCALE-Sim v2 took 64.7 s here, ../shared/reference/README.md: 500x less)
# Every run is at `--detail kernel` (per-operator event sums; metrics identical to full detail)
# unless DETAIL=full is set. A run past LIMIT seconds (default 600) is stopped and shown as such.
# Usage: bench/bench_scale.sh [GROUP ...]   groups: llm llm70b bert resnet scalesim (default: all)
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${ARCHSIM:-$here/build/archsim}"
shared="$here/../shared"
detail="${DETAIL:-kernel}"
limit="${LIMIT:-600}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(llm llm70b bert resnet scalesim)

# row LABEL GOAL_S METRIC(wall|cpu) ARCHSIM_ARGS...
row() {
  local label="$1" goal="$2" metric="$3"
  shift 3
  local t0 rc wall cpu value verdict
  rm -rf "$work/out"
  /usr/bin/time -f "%e %U %S" -o "$work/time" timeout "$limit" "$bin" "$@" --out "$work/out" --detail "$detail" \
      > /dev/null 2> "$work/err"
  rc=$?
  read -r wall user sys < <(tail -1 "$work/time")
  cpu="$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')"
  value="$wall"; [ "$metric" = cpu ] && value="$cpu"
  if [ "$rc" -eq 124 ]; then verdict="STOPPED at ${limit} s"
  elif [ "$rc" -ne 0 ]; then verdict="FAILED: $(tail -1 "$work/err")"
  elif awk -v v="$value" -v g="$goal" 'BEGIN { exit !(v <= g) }'; then verdict="met"
  else verdict="not met"; fi
  printf '%-58s %8s s %-4s (goal <= %5s s)  %s\n' "$label" "$value" "$metric" "$goal" "$verdict"
}

kinds=("tpu/tpu_128x128_ws" "kpu/t256" "gpu/a100_sxm4_40gb" "cpu/host" "roofline/tpu_v1")
printf '%s, %s, trace detail %s, %s\n' "$("$bin" --version 2>&1 | head -1)" "$(date -u +%F)" "$detail" \
  "$(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs"
for g in "${groups[@]}"; do
  case "$g" in
    llm)
      for c in tpu/tpu_128x128_ws kpu/t256 kpu/t768 gpu/a100_sxm4_40gb cpu/host; do
        row "llama2_7b 512+128 on $c" 10 wall run "$here/workloads/llm_presets.toml#llama2_7b" --arch "$here/configs/$c.toml"
      done ;;
    llm70b)
      row "llama2_70b prefill 4096 on kpu/t768" 30 wall run "$here/bench/scale_workloads.toml#llama2_70b@prefill" \
          --arch "$here/configs/kpu/t768.toml" ;;
    bert)
      for c in "${kinds[@]}"; do
        goal=2; [[ $c == cpu/* ]] && goal=3
        row "bert_large batch 128 on $c" "$goal" wall run "$here/bench/scale_workloads.toml#bert_large" --batch 128 --arch "$here/configs/$c.toml"
      done ;;
    resnet)
      for c in "${kinds[@]}"; do
        row "resnet50 batch 1 on $c" 1 wall run "$shared/models/resnet50.onnx" --arch "$here/configs/$c.toml"
      done ;;
    scalesim)
      row "SCALE-Sim ResNet-18 128x128 OS, ideal DRAM" 0.13 cpu run "$shared/reference/scalesim/Resnet18.csv" \
          --arch "$here/configs/tpu/tpu_128x128_os.toml" --set dram.ideal=true ;;
    *) echo "unknown group $g (llm llm70b bert resnet scalesim)" >&2; exit 2 ;;
  esac
done
