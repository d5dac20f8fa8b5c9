#!/usr/bin/env bash
# Runs every fuzz target of the project briefly (FUZZTIME, default 5s each),
# so the targets and their committed corpora keep passing. For a long run:
#   FUZZTIME=5m ./scripts/fuzz-short.sh
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-5s}
status=0
while IFS=: read -r file name; do
  pkg="./$(dirname "$file")"
  echo "fuzz: $pkg $name ($fuzztime)"
  if ! go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" -fuzzminimizetime=10x "$pkg"; then
    status=1
  fi
done < <(grep -rHoE --include='*_test.go' '^func (Fuzz[A-Za-z0-9_]+)' . | sed -E 's/:func /:/' | sort)
exit $status
