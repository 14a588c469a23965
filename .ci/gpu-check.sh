#!/usr/bin/env bash
# Checks the engine's Vulkan backend on a machine with a GPU, from the bundle that
# .ci/gpu-bundle.sh builds (make gpu-bundle; copy bin/gpu-check.tar.xz there, then
# `tar xJf gpu-check.tar.xz && gpu-check/gpu-check.sh`). It needs no Go, no apt and no
# OpenBLAS, and runs in about five minutes at most:
#   1. vulkaninfo --summary (the machine's Vulkan loader, else the bundle's);
#   2. the Vulkan parity tests (every layer forward and backward against the CPU engine,
#      50-step U-Net training against the CPU, determinism, optimizers, a lost device and
#      an allocation cap injected, sliding windows, checkpoints across devices, the memory
#      estimate against VK_EXT_memory_budget's usage) on the GPU: the tests prefer a
#      discrete GPU, then an integrated one (AMID_TEST_VK_DEVICE=N picks another);
#   3. the GPU benchmark (cmd/benchgpu) on the reference 2D and 3D U-Nets, side by side
#      with the CPU engine and, where python3 has PyTorch with CUDA, PyTorch;
#   4. a short training run of the segmentation plugin on the GPU, end to end through
#      amid: the demo task (generated head CTs) planned to the GPU's memory, trained for a
#      minute, predicted, verified and exported; the run must say its lanes trained on a
#      Vulkan device (AMID_DEVICE=vulkan; set AMID_DEVICE=vulkan:N for another device);
#      where nvidia-smi exists, its peak memory.used is printed beside the lanes' plans.
# Everything is printed and kept in gpu-check.log beside this script; record the figures
# in plugins/engine/README.md. TIMEOUT_SCALE=N multiplies every step's time limit (for a
# slow device such as lavapipe, on which the script can be tried out).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
log=$here/gpu-check.log
exec > >(tee "$log") 2>&1
fail=0
step() { echo; echo "== $*"; }
run() { # name, seconds, command…
  local name=$1 secs=$(( $2 * ${TIMEOUT_SCALE:-1} )); shift 2
  timeout "$secs" "$@"; local s=$?
  if [ $s -ne 0 ]; then echo "!! $name failed (exit $s)"; fail=1; fi
}

glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
glibc=${glibc:-0}
if [ "$(printf '%s\n2.34\n' "$glibc" | sort -V | head -1)" != 2.34 ]; then
  echo "glibc $glibc is older than 2.34, which the bundle's binaries (built on Debian 12) need"
  exit 1
fi
# The machine's own loader when it has one (it matches its driver), else the bundle's.
if ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1 '; then
  echo "Vulkan loader: the machine's"
else
  echo "Vulkan loader: the bundle's (libvulkan1 from Debian 12)"
  export AMID_VK_LOADER=$here/lib/libvulkan.so.1
fi
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$here/lib
export CI=true # no Vulkan test may skip: a missing device is a failure here

step "1. vulkaninfo --summary"
XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp} run vulkaninfo 30 "$here/bin/vulkaninfo" --summary

step "2. parity tests on the GPU"
cd "$here"
run "vk tests" 30 "$here/bin/vk.test" -test.v -test.count=1
run "engine device tests" 150 "$here/bin/engine.test" -test.count=1 -test.v \
  -test.run '^(TestDevice|TestCrossDevice|TestTrainerErrors|TestFaultEnvironment|TestOpenDevice|TestTrainingBytesMatchesDriver)'
run "device sliding windows" 30 "$here/bin/infer.test" -test.count=1 -test.v -test.run '^TestNetWindowOnDevice$'

step "3. GPU benchmark"
torch=()
if command -v python3 >/dev/null && python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  torch=(-torch python3)
  export AMID_TORCH_BENCH=$here/torch/torch_bench.py
else
  echo "(no PyTorch with CUDA here: the engine alone)"
fi
run benchgpu 120 "$here/bin/benchgpu" -steps 3 "${torch[@]}"

step "4. short training run of the segmentation plugin on the GPU"
work=$(mktemp -d)
run "demo task" 30 "$here/bin/amid" demo "$work/data"
export AMID_HOME=$work/home AMID_DEVICE=${AMID_DEVICE:-vulkan}
smi=
if command -v nvidia-smi >/dev/null; then # the driver's own figure, sampled every second
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1 >"$work/smi-idle"
  (while sleep 1; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1; done >"$work/smi") &
  smi=$!
fi
run "amid run" 150 "$here/bin/amid" run "$work/data/task.yaml" --out "$work/run" --budget 60s --answers "$work/data/answers" \
  >"$work/run.log" 2>&1
cat "$work/run.log"
if [ -n "$smi" ]; then
  kill "$smi" 2>/dev/null
  echo "nvidia-smi: peak memory.used $(sort -n "$work/smi" | tail -1) MiB, $(cat "$work/smi-idle") MiB before the run;" \
    "planned per lane: $(grep -o '([0-9]* MiB planned)' "$work/run.log" | tr '\n' ' ')"
fi
if grep -q "trained on vulkan" "$work/run.log"; then
  grep -E " on vulkan:|trained on|computed with" "$work/run.log"
else
  echo "!! no lane trained on a Vulkan device (see $work/run.log)"; fail=1
fi
run "amid report" 30 "$here/bin/amid" report "$work/run"

echo
if [ $fail -ne 0 ]; then echo "gpu-check: FAILED (see $log)"; exit 1; fi
echo "gpu-check: passed (log: $log)"
