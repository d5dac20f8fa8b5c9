package main

import (
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
