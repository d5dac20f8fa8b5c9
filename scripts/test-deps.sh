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
# Needs node (20 or newer) and npm on PATH; without them it says so and
# exits non-zero (set TEST_DEPS_OPTIONAL=1 to only warn, e.g. on a machine
# where those tests are meant to be skipped).
#
# Node 20: acpx 0.19.1 and its commander declare node >= 22.13 / 22.12, so
# npm ci on Node 20 warns "Unsupported engine"; both are plain ES modules
# and, checked on Node 20.20 (the CI machine's), run and pass every acpx
# test. Instead of those warnings this script says it once and then runs
# the installed acpx, so a Node on which it does not work fails here, by
# name, not later inside a test.
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

# The oldest Node the packages run on (see above; the MCP server's
# @hono/node-server declares >= 20).
node_min=20
node_version=$(node --version) # v20.20.2
if ! printf '%s\n%s\n' "$node_min" "${node_version#v}" | sort -C -V; then
  echo "test-deps: node $node_version is too old for the npm-based e2e tests: they need Node $node_min or newer (22.13+ is what acpx declares)" >&2
  if [ "${TEST_DEPS_OPTIONAL:-}" = 1 ]; then
    exit 0
  fi
  exit 1
fi
if ! printf '%s\n%s\n' 22.13 "${node_version#v}" | sort -C -V; then
  echo "test-deps: node $node_version: acpx declares node >= 22.13 and npm warns so; checking that it runs on this one"
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
  # Engine warnings are the known Node 20 case above; errors still show.
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" >"$stamp"
done

# acpx must run on this node, not only be installed.
acpx_want=$(node -p 'require("./e2e/testdata/acpx/package.json").dependencies.acpx')
if ! acpx_got=$(node e2e/testdata/acpx/node_modules/acpx/dist/cli.js --version 2>&1) || [ "$acpx_got" != "$acpx_want" ]; then
  echo "test-deps: acpx $acpx_want does not run on node $node_version (it printed: $acpx_got); install Node 22.13 or newer" >&2
  exit 1
fi
echo "test-deps: acpx $acpx_got runs on node $node_version"
