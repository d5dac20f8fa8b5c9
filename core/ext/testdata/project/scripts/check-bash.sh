#!/bin/sh
# The team's PreToolUse guard: refuse recursive deletes.
input=$(cat)
case "$input" in
  *'rm -rf'*) echo "Blocked by policy: rm -rf is not allowed in this repository" >&2; exit 2 ;;
esac
exit 0
