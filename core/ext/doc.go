// Package ext reads the extension files users already keep for other
// agents — custom slash commands, skills, typed subagents and hooks, in
// the layouts of Claude Code (.claude/), of dsh itself (.dsh/) and of the
// shared .agents/ folder — and turns them into plain values the runtime
// uses. It only reads and decides: running a hook or a command is the
// runtime's (core) business, so this package starts no process.
//
// Every file is read bounded (size, count, depth), symlinks are followed
// only to regular files and folders without loops, and a file that cannot
// be used is reported as a Diagnostic while the rest load.
package ext
