package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sandboxWritablePaths adds up from the file and the environment; a
// folder that does not exist, or that this user cannot write, is an error
// at start naming the path and its source.
func TestSandboxWritablePaths(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got := configShown(t, map[string]any{"sandboxWritablePaths": []string{a}}, map[string]string{"DSH_SANDBOX_WRITABLE_PATHS": b})["sandboxWritablePaths"]
	if got["value"] != a+", "+b || got["source"] != "config file + environment DSH_SANDBOX_WRITABLE_PATHS" {
		t.Errorf("sandboxWritablePaths = %v", got)
	}
	missing := filepath.Join(dir, "missing")
	code, _, stderr := runConfig(t, map[string]any{"sandboxWritablePaths": []string{missing}}, nil)
	if code != 2 || !strings.Contains(stderr, missing) || !strings.Contains(stderr, "does not exist") {
		t.Errorf("a missing folder: exit %d, %s", code, stderr)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runConfig(t, map[string]any{"sandboxWritablePaths": []string{file}}, nil); code != 2 || !strings.Contains(stderr, "is not a folder") {
		t.Errorf("a file: exit %d, %s", code, stderr)
	}
	if os.Geteuid() == 0 {
		return // root may write anywhere: the unwritable case needs a user
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runConfig(t, map[string]any{"sandboxWritablePaths": []string{ro}}, nil); code != 2 || !strings.Contains(stderr, "not writable") {
		t.Errorf("an unwritable folder: exit %d, %s", code, stderr)
	}
}

// commandEnv: names and NAME* prefixes from the file and DSH_COMMAND_ENV;
// a lone * or a name that is not one is refused.
func TestCommandEnvSetting(t *testing.T) {
	got := configShown(t, map[string]any{"commandEnv": []string{"PGHOST", "MYAPP_*"}}, map[string]string{"DSH_COMMAND_ENV": "A, B"})["commandEnv"]
	if got["value"] != "PGHOST, MYAPP_*, A, B" || got["source"] != "config file + environment DSH_COMMAND_ENV" {
		t.Errorf("commandEnv = %v", got)
	}
	for _, bad := range []string{"*", "A-B"} {
		if code, _, stderr := runConfig(t, map[string]any{"commandEnv": []string{bad}}, nil); code != 2 || !strings.Contains(stderr, "commandEnv entry") {
			t.Errorf("commandEnv %q: exit %d, %s", bad, code, stderr)
		}
	}
}

// The tool lists add up from the config file, the environment and the
// flags; Claude Code's spellings name dsh's tools; a malformed entry is an
// error naming where.
func TestToolListSettings(t *testing.T) {
	shown := configShown(t, map[string]any{"allowedTools": []string{"Bash(git log:*)", "mcp__mem__create"}, "disallowedTools": []string{"WebFetch"}},
		map[string]string{"DSH_DISALLOWED_TOOLS": "edit(secret/**, x), glob"}, "--allowed-tools", "read,edit(src/**)", "--disallowed-tools", "bash(git push)")
	if got := shown["allowedTools"]; got["value"] != "bash(git log), mcp__mem__create, read, edit(src/**)" || got["source"] != "config file + flag --allowed-tools" {
		t.Errorf("allowedTools = %v", got)
	}
	if got := shown["disallowedTools"]; got["value"] != "web_fetch, edit(secret/**, x), glob, bash(git push)" ||
		got["source"] != "config file + environment DSH_DISALLOWED_TOOLS + flag --disallowed-tools" {
		t.Errorf("disallowedTools = %v", got)
	}
	if code, _, stderr := runConfig(t, nil, nil, "--allowed-tools", "bash(git"); code != 2 || !strings.Contains(stderr, "flag --allowed-tools") {
		t.Errorf("a malformed entry: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runConfig(t, nil, map[string]string{"DSH_ALLOWED_TOOLS": "read("}); code != 2 || !strings.Contains(stderr, "environment DSH_ALLOWED_TOOLS") {
		t.Errorf("a malformed entry in the environment: exit %d, %s", code, stderr)
	}
}
