#!/usr/bin/env bash
# Installs what the test suite needs beyond Go and its modules, so `go test`
# itself never touches the network. .ci/run calls it on every clean clone;
# run it once on a new machine before `go test ./...`. Idempotent.
#
# What it installs (each pinned by a package.json + package-lock.json under
# e2e/testdata, installed with `npm ci`):
#   - e2e/testdata/acpx: acpx, the independent ACP client the TestACPX* tests
#     drive dsh acp with.
#   - e2e/testdata/mcp-everything: @modelcontextprotocol/server-everything, the
#     MCP server (stdio and streamable HTTP) the TestMCPEverything* tests
#     connect dsh to.
# Tests that need a package that is not installed skip with a message that
# names this script.
#
# Needs node and npm on PATH; without them it says so and exits non-zero
# (set TEST_DEPS_OPTIONAL=1 to only warn, e.g. on a machine where those
# tests are meant to be skipped).
set -euo pipefail
cd "$(dirname "$0")/.."

npm_dirs=(e2e/testdata/acpx e2e/testdata/mcp-everything)

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "test-deps: node and npm are needed for the npm-based e2e tests (${npm_dirs[*]}); not on PATH" >&2
  if [ "${TEST_DEPS_OPTIONAL:-}" = 1 ]; then
    exit 0
  fi
  exit 1
fi

for dir in "${npm_dirs[@]}"; do
  # npm ci deletes and reinstalls node_modules: skip it when the tree was
  # installed from this very lock file (the stamp holds its hash).
  stamp="$dir/node_modules/.dsh-installed-lock.sha256"
  want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "test-deps: $dir is up to date"
    continue
  fi
  echo "test-deps: npm ci in $dir"
  (cd "$dir" && npm ci --no-audit --no-fund)
  echo "$want" >"$stamp"
done
