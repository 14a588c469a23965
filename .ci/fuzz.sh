#!/usr/bin/env bash
# Runs every fuzz target in the module for the given time each (default 5s), one worker
# each so that a loaded machine does not starve the fuzzing engine.
set -euo pipefail
t=${1:-5s}
mapfile -t targets < <(grep -rlE '^func Fuzz[A-Za-z0-9_]*\(' --include='*_test.go' . | grep -v '^./.cache/' | sort)
n=0
for f in "${targets[@]}"; do
  dir=$(dirname "$f")
  for name in $(grep -oE '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //'); do
    echo "fuzz $dir $name ($t)"
    go test -run '^$' -fuzz "^${name}\$" -fuzztime "$t" -parallel 1 "$dir" >/tmp/amid-fuzz.log 2>&1 || { cat /tmp/amid-fuzz.log; exit 1; }
    n=$((n+1))
  done
done
echo "fuzz: $n targets passed"
