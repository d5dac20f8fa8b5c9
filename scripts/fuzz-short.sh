#!/usr/bin/env bash
# Runs every fuzz target of the project briefly (FUZZTIME, default 5s each),
# so the targets and their committed corpora keep passing. For a long run:
#   FUZZTIME=5m ./scripts/fuzz-short.sh
#
# Go's fuzzer sometimes ends a time-boxed run with "context deadline
# exceeded" and no failing input, when the deadline falls while it is still
# working on a new interesting input: that is the fuzzer's own timing, not a
# finding. Such a run is tried once more and, if it ends the same way, is
# reported and not counted as a failure. A real finding always writes a
# failing input ("Failing input written to ...") and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-5s}
status=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

run_target() { # pkg name
  go test -run='^$' -fuzz="^${2}\$" -fuzztime="$fuzztime" -fuzzminimizetime=10x "$1" >"$out" 2>&1
}

while IFS=: read -r file name; do
  pkg="./$(dirname "$file")"
  echo "fuzz: $pkg $name ($fuzztime)"
  for try in 1 2; do
    if run_target "$pkg" "$name"; then
      tail -n 1 "$out"
      break
    fi
    cat "$out"
    if grep -q "Failing input written" "$out" || ! grep -q "context deadline exceeded" "$out"; then
      status=1
      break
    fi
    if [ "$try" = 2 ]; then
      echo "fuzz: $name ended twice at the fuzzer's deadline with no failing input; not a finding"
    else
      echo "fuzz: $name ended at the fuzzer's deadline with no failing input; trying once more"
    fi
  done
done < <(grep -rHoE --include='*_test.go' '^func (Fuzz[A-Za-z0-9_]+)' . | sed -E 's/:func /:/' | sort)
exit $status
