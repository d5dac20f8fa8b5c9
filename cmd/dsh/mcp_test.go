package main

import (
	"os"
	"strings"
	"testing"
)

// The config file's mcpServers: the Claude Code / Cursor shape is read; a
// value that is not an object of servers is refused in words; a bad entry
// is kept (to be reported when a session starts), not a reason to refuse
// the whole file.
func TestConfigMCPServers(t *testing.T) {
	path := writeConfig(t, `{"mcpServers": {
		"gh": {"command": "npx", "args": ["-y", "x"], "env": {"T": "1"}},
		"docs": {"type": "http", "url": "https://d.example/mcp"},
		"broken": {"args": []}
	}}`)
	t.Setenv("DSH_CONFIG", path)
	s, err := (&settingFlags{}).resolve("auto")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.MCPServers) != 3 || s.MCPServers[0].Name != "broken" || s.MCPServers[0].Invalid == "" ||
		s.MCPServers[1].URL != "https://d.example/mcp" || s.MCPServers[2].Command != "npx" {
		t.Fatalf("servers %+v", s.MCPServers)
	}
	t.Setenv("DSH_CONFIG", writeConfig(t, `{"mcpServers": ["gh"]}`))
	if _, err := (&settingFlags{}).resolve("auto"); err == nil || !strings.Contains(err.Error(), "mcpServers") {
		t.Fatalf("a list of servers must be refused in words: %v", err)
	}
}

// dsh mcp add and remove edit the config file's mcpServers, keeping its
// other keys; list starts each server and shows a failed one's error.
func TestMCPCommand(t *testing.T) {
	path := writeConfig(t, `{"model": "m-kept", "mcpServers": {"old": {"command": "x"}}}`)
	t.Setenv("DSH_CONFIG", path)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("H26B_TOKEN", "tok")
	run := func(args ...string) (int, string, string) {
		var out, errb strings.Builder
		code := dispatch(append([]string{"mcp"}, args...), nil, &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, out, errb := run("add", "gone", "--env", "T=${H26B_T:-x}", "--", "dsh-no-such-server", "--flag", "-v"); code != 0 || !strings.Contains(out, `added MCP server "gone"`) {
		t.Fatalf("add: %d %s %s", code, out, errb)
	}
	if code, _, errb := run("add", "web", "--url", "https://w.example/mcp", "--header", "Authorization: Bearer ${H26B_TOKEN}"); code != 0 {
		t.Fatalf("add --url: %d %s", code, errb)
	}
	if code, _, errb := run("add", "bad", "--url", "ftp://x"); code != 2 || !strings.Contains(errb, "not an http(s) URL") {
		t.Errorf("a bad URL: %d %s", code, errb)
	}
	if code, _, errb := run("remove", "old"); code != 0 {
		t.Fatalf("remove: %d %s", code, errb)
	}
	if code, _, errb := run("remove", "old"); code != 1 || !strings.Contains(errb, `no MCP server "old"`) {
		t.Errorf("remove twice: %d %s", code, errb)
	}
	s, err := (&settingFlags{}).resolve("auto")
	if err != nil {
		t.Fatal(err)
	}
	if s.Model != "m-kept" || len(s.MCPServers) != 2 || s.MCPServers[0].Name != "gone" || strings.Join(s.MCPServers[0].Args, " ") != "--flag -v" ||
		s.MCPServers[0].Env[0].Value != "x" || s.MCPServers[1].Headers[0].Value != "Bearer tok" {
		t.Fatalf("after add and remove: model %q servers %+v", s.Model, s.MCPServers)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if code, _, errb := run("add", "gone", "--", "dsh-no-such-server"); code != 0 {
		t.Fatalf("add to a new file: %d %s", code, errb)
	}
	code, out, _ := run("list")
	if code != 1 || !strings.Contains(out, "gone") || !strings.Contains(out, "failed") || !strings.Contains(out, "not found on PATH") {
		t.Errorf("list: %d\n%s", code, out)
	}
}
