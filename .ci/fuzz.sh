#!/usr/bin/env bash
# Runs every fuzz target in the module for the given budget each: an execution count such
# as 3000x (the short pass of `make test`) or a duration such as 3m (`make fuzz`). One worker
# each, so that a loaded machine does not starve the fuzzing engine.
#
# Go 1.26's fuzz coordinator can fail a duration-bounded run with a bare "context deadline
# exceeded" when the time runs out while a worker is mid-call (golang/go#75804, fixed in Go
# 1.27). Count budgets never hit it; for duration budgets such a run is retried once, and any
# run that wrote a failing input always fails.
set -euo pipefail
t=${1:-3000x}
mapfile -t targets < <(grep -rlE '^func Fuzz[A-Za-z0-9_]*\(' --include='*_test.go' . | grep -v '^./.cache/' | sort)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
n=0
for f in "${targets[@]}"; do
  dir=$(dirname "$f")
  for name in $(grep -oE '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //'); do
    for try in 1 2; do
      echo "fuzz $dir $name ($t)"
      if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$t" -parallel 1 "$dir" >"$log" 2>&1; then
        break
      fi
      if [ "$try" = 1 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
        echo "fuzz: $name hit the fuzz coordinator's deadline race (golang/go#75804); retrying once"
        continue
      fi
      cat "$log"
      exit 1
    done
    n=$((n+1))
  done
done
echo "fuzz: $n targets passed"
