package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDoorsImportNoOtherDoor enforces ARCHITECTURE.md §2's rules of direction for
// the doors and the gateway (core's own rule is tested in core): the
// doors do not import each other or subagent, and subagent may use the
// doors' clients and framing (sdkrpc/client, acp/wire) but not their servers. Only cmd wires them together.
func TestDoorsImportNoOtherDoor(t *testing.T) {
	const mod = "github.com/dsh-dev/dsh/"
	for _, tc := range []struct {
		pkgs   string
		banned []string // packages (and their subpackages) that must not be dependencies
		exact  []string // packages that must not be dependencies (subpackages may be)
	}{
		{pkgs: mod + "acp/...", banned: []string{mod + "sdkrpc", mod + "subagent", mod + "cmd", "github.com/sourcegraph/jsonrpc2"}},
		{pkgs: mod + "sdkrpc/...", banned: []string{mod + "acp", mod + "subagent", mod + "cmd", "github.com/coder/acp-go-sdk"}},
		// acp/wire is the ACP framing both sides use (the gateway's ACP
		// client runs on it); acp itself is the door's server.
		{pkgs: mod + "subagent/...", banned: []string{mod + "cmd"}, exact: []string{mod + "sdkrpc", mod + "acp"}},
	} {
		out, err := exec.Command("go", "list", "-deps", tc.pkgs).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", tc.pkgs, err, out)
		}
		own := strings.TrimSuffix(tc.pkgs, "/...")
		for _, dep := range strings.Fields(string(out)) {
			if dep == own || strings.HasPrefix(dep, own+"/") {
				continue
			}
			for _, bad := range tc.banned {
				if dep == bad || strings.HasPrefix(dep, bad+"/") {
					t.Errorf("%s depends on %s", tc.pkgs, dep)
				}
			}
			for _, bad := range tc.exact {
				if dep == bad {
					t.Errorf("%s depends on %s (the door's server; only its client is allowed)", tc.pkgs, dep)
				}
			}
		}
	}
}

// TestDoorsImportOnlyCore enforces ARCHITECTURE.md §4's one API for the doors: the
// door servers (acp, sdkrpc's server, its framing and its wire vocabulary
// sdkrpc/protocol) import core and the event vocabulary (core/event),
// nothing deeper in core; core names what they need of permissions, MCP,
// the store, the sandbox and the tools (core/api.go). sdkrpc/protocol
// speaks the wire only and imports neither. The Go client sdkrpc/client is
// a client, not a door: it starts child processes with core/proc.
func TestDoorsImportOnlyCore(t *testing.T) {
	const mod = "github.com/dsh-dev/dsh/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}:{{join .Imports \" \"}}",
		mod+"acp/...", mod+"sdkrpc/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	doors := map[string]bool{mod + "acp": true, mod + "acp/wire": true, mod + "sdkrpc": true,
		mod + "sdkrpc/dispatch": true, mod + "sdkrpc/ndjson": true, mod + "sdkrpc/protocol": true}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ":")
		if !doors[pkg] {
			continue
		}
		checked++
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, mod+"core/") && imp != mod+"core/event" {
				t.Errorf("%s imports %s: a door imports core and core/event only", pkg, imp)
			}
		}
	}
	if checked != len(doors) {
		t.Errorf("checked %d door packages, want %d (a package moved?)", checked, len(doors))
	}
}
