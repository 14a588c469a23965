#!/usr/bin/env bash
# Runs the make targets named, in order, as `make test` lists them, stops at the first that
# fails, and prints each one's wall time at the end (the failed one's too), so that the
# suite's slow steps show in every CI log.
set -uo pipefail
make=${MAKE:-make}
lines=()
rc=0
all=$(date +%s)
for t in "$@"; do
  start=$(date +%s)
  "$make" --no-print-directory "$t" || rc=$?
  lines+=("$(printf '%-20s %5d s' "$t" $(($(date +%s) - start)))")
  if [ "$rc" -ne 0 ]; then
    lines+=("(stopped: $t failed)")
    break
  fi
done
echo
echo "make test: each step's wall time"
printf '  %s\n' "${lines[@]}"
printf '  %-20s %5d s\n' total $(($(date +%s) - all))
exit "$rc"
