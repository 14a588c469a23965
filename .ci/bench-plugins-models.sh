#!/usr/bin/env bash
# Training speed of each built-in plugin's default model, side by side in one run: the
# engine (the plugin's BenchmarkTrainStep, `go test -bench` in its package) against
# PyTorch 1.13 (Debian python3-torch, /usr/bin/python3, 2 threads) on the same
# architecture, loss and optimizer step (.ci/bench_plugins_models.py). One row per plugin
# package with a BenchmarkTrainStep; the benchmark writes its model's description to the
# file $AMID_BENCH_SPEC and the Python side rebuilds it from there.
#
#   .ci/bench-plugins-models.sh [steps] [plugin ...]     (default: 3 steps, every plugin)
#
# Both sides run on 2 threads (GOMAXPROCS=2, torch.set_num_threads(2)), warm up one step
# and report the median of the timed steps. On a shared machine compare only within a run.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-3}
shift || true
/usr/bin/python3 -c 'import torch' 2>/dev/null || {
  if [ "$(id -u)" = 0 ]; then apt-get install -y -qq python3-torch >/dev/null
  else echo "bench-plugins-models needs: sudo apt-get install -y python3-torch"; exit 1; fi; }
out=.cache/bench-plugins-models
mkdir -p "$out"
if [ $# -gt 0 ]; then
  pkgs=("$@")
else
  mapfile -t pkgs < <(grep -rlE '^func BenchmarkTrainStep\(' --include='*_test.go' plugins \
    | grep -v '^plugins/examples/' | xargs -r -n1 dirname | sort -u | sed 's#^plugins/##')
fi
[ ${#pkgs[@]} -gt 0 ] || { echo "no plugin has a BenchmarkTrainStep"; exit 1; }
rows=()
for p in "${pkgs[@]}"; do
  name=${p//\//_}
  spec="$out/$name.json"
  rm -f "$spec"
  echo "== $p: engine" >&2
  AMID_BENCH_SPEC="$PWD/$spec" GOMAXPROCS=2 go test -run '^$' -bench '^BenchmarkTrainStep$' \
    -benchtime "${steps}x" "./plugins/$p/" | tee "$out/$name.go.txt" >&2
  echo "== $p: pytorch" >&2
  if [ -s "$spec" ]; then
    /usr/bin/python3 .ci/bench_plugins_models.py --spec "$spec" --steps "$steps" --threads 2 \
      | tee "$out/$name.torch.json" >&2
  else
    echo '{"error": "the benchmark wrote no model description"}' >"$out/$name.torch.json"
  fi
  rows+=("$name")
done
/usr/bin/python3 - "$out" "${rows[@]}" <<'PY'
import json, re, sys
d, rows = sys.argv[1], sys.argv[2:]
print(f"\n{'plugin':<16}{'model':<10}{'batch':>6}{'patch':>14}"
      f"{'engine samples/s':>18}{'torch samples/s':>17}{'ratio':>8}{'engine cpu-s':>14}{'torch cpu-s':>13}")
for name in rows:
    eng = {}
    for line in open(f"{d}/{name}.go.txt"):
        if line.startswith("BenchmarkTrainStep"):
            eng = {u: float(v) for v, u in re.findall(r"([\d.e+-]+) ([\w/-]+)", line.split(None, 2)[2])}
    try:
        spec = json.load(open(f"{d}/{name}.json"))
    except (OSError, ValueError):
        spec = {}
    tor = json.loads(open(f"{d}/{name}.torch.json").read().strip().splitlines()[-1])
    es, ts = eng.get("samples/s"), tor.get("samples_per_s")
    patch = "×".join(str(x) for x in spec.get("patch", [])[1 if spec.get("patch", [0])[0] == 1 else 0:])
    line = f"{name:<16}{spec.get('model', '?'):<10}{spec.get('batch', 0):>6}{patch:>14}"
    line += f"{es:>18.3f}" if es else f"{'(failed)':>18}"
    if ts:
        line += f"{ts:>17.3f}"
        line += f"{es / ts:>7.2f}x" if es else f"{'':>8}"
        line += f"{eng.get('cpu-ms', float('nan')) / 1000:>14.2f}{tor['cpu_ms'] / 1000:>13.2f}"
    else:
        line += f"  {tor.get('error', 'no PyTorch figure')}"
    print(line)
print("ratio = engine samples/s ÷ PyTorch samples/s (above 1: the engine is faster); "
      "cpu-s = CPU seconds per step, all threads")
PY
