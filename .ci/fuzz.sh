#!/usr/bin/env bash
# Runs every fuzz target in the module for the given budget each: an execution count such
# as 3000x (the short pass of `make test`) or a duration such as 3m (`make fuzz`). One worker
# each, so that a loaded machine does not starve the fuzzing engine, and as many targets at
# once as the machine has cores (FUZZJOBS overrides): on two cores the short pass takes half
# the time one target at a time took. The first target to fail stops the rest, and its log
# is printed whole.
#
# Go 1.26's fuzz coordinator can fail a duration-bounded run with a bare "context deadline
# exceeded" when the time runs out while a worker is mid-call (golang/go#75804, fixed in Go
# 1.27). Count budgets never hit it; for duration budgets such a run is retried once, and any
# run that wrote a failing input always fails.
set -euo pipefail
export FUZZTIME=${1:-3000x}
jobs=${FUZZJOBS:-$(nproc)}

# one fuzzes target $2 of package directory $1; it exits 255 on failure, which stops xargs.
one() {
  local dir=$1 name=$2 log
  log=$(mktemp)
  for try in 1 2; do
    if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -parallel 1 "$dir" >"$log" 2>&1; then
      echo "fuzz $dir $name ($FUZZTIME)"
      rm -f "$log"
      return 0
    fi
    if [ "$try" = 1 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
      echo "fuzz: $name hit the fuzz coordinator's deadline race (golang/go#75804); retrying once"
      continue
    fi
    break
  done
  echo "fuzz $dir $name ($FUZZTIME) failed:"
  cat "$log"
  rm -f "$log"
  exit 255
}
export -f one

mapfile -t targets < <(grep -rlE '^func Fuzz[A-Za-z0-9_]*\(' --include='*_test.go' . | grep -v '^./.cache/' | sort)
pairs=()
for f in "${targets[@]}"; do
  for name in $(grep -oE '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //'); do
    pairs+=("$(dirname "$f")" "$name")
  done
done
printf '%s\n' "${pairs[@]}" | xargs -n 2 -P "$jobs" bash -c 'one "$1" "$2"' _
echo "fuzz: $((${#pairs[@]} / 2)) targets passed"
