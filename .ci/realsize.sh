#!/usr/bin/env bash
# realsize.sh: a ReX-MLE 3D challenge at its real image size, end to end with `amid run`,
# to show memory and time stay within budget on this machine. Not part of make test (it
# takes minutes). Usage: .ci/realsize.sh [challenge] [cases] [budget]
set -euo pipefail
cd "$(dirname "$0")/.."
id=${1:-isles22}
cases=${2:-6}
budget=${3:-4m}
out=${REALSIZE_DIR:-$(mktemp -d /tmp/amid-realsize-XXXX)}
make -s amid >/dev/null # the plugins first, then amid, which trusts them as built
export AMID_HOME=$out/home
echo "generating $id at real size ($cases cases) into $out/data"
/usr/bin/time -f "synth: %e s, peak %M KiB" bin/amid synth --task "$id" --out "$out/data" --cases "$cases" --real-size
du -sh "$out/data/public" | sed 's/^/data: /'
echo "running $id with a $budget budget"
/usr/bin/time -f "run: %e s wall, peak RSS of the host or a plugin %M KiB" \
  bin/amid run "assets/tasks/rexmle/$id.yaml" --data "$out/data/public" --answers "$out/data/private" \
  --out "$out/run" --budget "$budget" --folds 2 2>&1 | grep -v "plugin process exited"
bin/amid report "$out/run"
