#!/usr/bin/env bash
# The official metrics, side by side in one run: AMID's Go implementation (go test -bench in
# plugins/metrics) against the scipy/skimage computation of the same numbers on the same
# generated shapes (plugins/metrics/testdata/bench_*.py). Prints wall and CPU times and ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
/usr/bin/python3 -c 'import scipy, skimage' 2>/dev/null || {
  if [ "$(id -u)" = 0 ]; then apt-get install -y -qq python3-scipy python3-skimage >/dev/null
  else echo "bench-metrics needs: sudo apt-get install -y python3-scipy python3-skimage"; exit 1; fi; }
out=.cache/bench-metrics; mkdir -p "$out"
go test -run '^$' -bench . -benchtime 3x ./plugins/metrics/ | tee "$out/go.txt"
/usr/bin/python3 plugins/metrics/testdata/bench_volumetric.py | tee "$out/py_volumetric.txt"
(cd plugins/metrics/testdata && /usr/bin/python3 bench_2d.py) | tee "$out/py_2d.json"
/usr/bin/python3 - "$out" <<'PY'
import json, re, sys
d = sys.argv[1]
go = {}
for line in open(f"{d}/go.txt"):
    m = re.match(r"Benchmark(\w+)-\d+\s+\d+\s+([\d.]+) ns/op(.*)", line)
    if not m:
        continue
    cpu = re.search(r"([\d.]+) cpu-(s|ms)/op", m.group(3))
    cpu_s = (float(cpu.group(1)) / (1000 if cpu.group(2) == "ms" else 1)) if cpu else float("nan")
    go[m.group(1)] = (float(m.group(2)) / 1e9, cpu_s)
py = {}
for line in open(f"{d}/py_volumetric.txt"):
    m = re.match(r"(\w+)\t([\d.]+) s/op wall\t([\d.]+) cpu-s/op", line)
    if m:
        py[m.group(1)] = (float(m.group(2)), float(m.group(3)))
for k, v in json.load(open(f"{d}/py_2d.json")).items():
    if isinstance(v, dict):
        py[k] = (v["wall_ms"] / 1000, v["cpu_ms"] / 1000)
pairs = [("HD95SurfaceDice256", "HD95SurfaceDice256"), ("CLDice128", "CLDice128"), ("EDT256", "EDT256"),
         ("Label256", "Label256"), ("CellSegF1", "cellseg_f1_2048_2000cells"), ("SSIM", "ssim_1024_float32"),
         ("LNCC", "lncc_1024_float32"), ("LinearSumAssignment", "lsa_dense_500"), ("COCOEvaluate", None)]
print(f"\n{'metric':<22}{'go wall s':>11}{'py wall s':>11}{'ratio':>8}{'go cpu s':>11}{'py cpu s':>11}{'ratio':>8}")
for g, p in pairs:
    if g not in go:
        continue
    gw, gc = go[g]
    if p and p in py:
        pw, pc = py[p]
        print(f"{g:<22}{gw:11.4f}{pw:11.4f}{pw/gw:7.1f}x{gc:11.4f}{pc:11.4f}{pc/gc:7.1f}x")
    else:
        print(f"{g:<22}{gw:11.4f}{'(no pycocotools in Debian)':>30}")
print("ratio = Python time / Go time (higher is faster)")
PY
