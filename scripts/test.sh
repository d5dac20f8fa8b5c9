#!/usr/bin/env bash
# The test command: everything CI checks, runnable on a fresh clone with only
# Go (and, for the npm-based e2e tests, Node) installed. .ci/run calls this
# very script, so what a contributor runs is what CI runs.
#
#   ./scripts/test.sh            # vet, staticcheck, go.mod tidy, -race tests, short fuzz
#   FUZZTIME=0 ./scripts/test.sh # the same without the fuzz pass
#
# It installs its own pinned tools and nothing system-wide:
#   - staticcheck, pinned below, built by `go run pkg@version` into the Go
#     build cache (checksummed by the Go module mirror; nothing on PATH).
#   - the npm packages the e2e tests drive, through scripts/test-deps.sh,
#     into e2e/testdata/*/node_modules (gitignored).
# Without node/npm (or with a Node too old for those packages) the npm-based
# tests are skipped with a message naming what is missing; under CI=true
# (.ci/run) that is a failure instead.
set -euo pipefail
cd "$(dirname "$0")/.."

# staticcheck 0.8.2 (2026.2.2) is the release that builds with and
# understands go1.26. Its checks are configured in staticcheck.conf.
STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2

step() { printf '\n== %s\n' "$*"; }

step "go: $(go version)"

step "npm packages for the e2e tests (scripts/test-deps.sh)"
if ! ./scripts/test-deps.sh; then
  if [ "${CI:-}" = true ]; then
    echo "test: scripts/test-deps.sh failed (CI=true: the npm-based e2e tests are required)" >&2
    exit 1
  fi
  echo "test: continuing without them: the npm-based e2e tests will be skipped (see the message above)" >&2
fi

step "go vet"
go vet ./...

step "staticcheck (${STATICCHECK#*@})"
go run "$STATICCHECK" ./...

step "go.mod and go.sum are tidy"
go mod tidy -diff

step "tests (-race)"
go test -race -count=1 -timeout 25m ./...

if [ "${FUZZTIME:-5s}" != 0 ]; then
  step "fuzz targets, briefly (FUZZTIME=${FUZZTIME:-5s} each)"
  ./scripts/fuzz-short.sh
fi

step "all passed"
