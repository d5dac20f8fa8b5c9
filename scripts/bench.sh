#!/usr/bin/env bash
# Runs every benchmark of the project and prints one table of medians with
# the targets beside them. COUNT runs per benchmark (default 5); BENCH
# narrows the set (a go test -bench regexp, default all); BENCHTIME is
# go test's -benchtime (default 1s).
#   ./scripts/bench.sh            # everything
#   BENCH=SDK COUNT=10 ./scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
count=${COUNT:-5}
bench=${BENCH:-.}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
echo "running benchmarks (count=$count); raw output in $raw while it runs" >&2
go test -run '^$' -bench "$bench" -benchtime "${BENCHTIME:-1s}" -count "$count" ./... 2>&1 | tee "$raw" | grep -E '^(ok|FAIL|---|panic)' >&2 || true
go run ./scripts/benchreport < "$raw"
