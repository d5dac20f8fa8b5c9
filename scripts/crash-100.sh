#!/usr/bin/env bash
# Runs the crash-recovery test (e2e TestCrashRecovery: 50 SIGKILLs at
# random points of tool-heavy turns through dsh sdk and dsh run, each
# session then resumed) COUNT times in a row (default 100), stopping at the
# first failure. Each run logs its seed; DSH_CRASH_SEED=<seed> replays one.
# Too slow for CI's default run (about 10 s a run on 2 cores). Extra
# arguments go to go test (e.g. -race).
#   ./scripts/crash-100.sh            # 100 runs
#   COUNT=20 ./scripts/crash-100.sh -race
set -euo pipefail
cd "$(dirname "$0")/.."
count=${COUNT:-100}
start=$(date +%s)
go test -count="$count" -failfast -timeout 0 -run '^TestCrashRecovery$' "$@" ./e2e/
echo "crash-100: $count runs of TestCrashRecovery passed in $(( $(date +%s) - start )) s"
