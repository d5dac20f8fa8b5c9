package mcp

import (
	"strings"
	"testing"
)

func TestExpandVars(t *testing.T) {
	env := map[string]string{"TOKEN": "t0k", "EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	for in, want := range map[string]string{
		"plain": "plain", "Bearer ${TOKEN}": "Bearer t0k", "${TOKEN}${TOKEN}": "t0kt0k",
		"${MISSING:-def}": "def", "${EMPTY:-def}": "def", "${EMPTY}": "", "${TOKEN:-x}": "t0k",
		"$TOKEN": "$TOKEN", "${MISSING:-}": "", "http://h/${TOKEN}/x": "http://h/t0k/x",
	} {
		got, err := expandVars(in, lookup)
		if err != nil || got != want {
			t.Errorf("%q → %q, %v; want %q", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"${MISSING}": "MISSING is not set", "a ${TOKEN": "without its closing }", "${1X}": "not a variable reference",
	} {
		if _, err := expandVars(in, lookup); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: err %v, want %q", in, err, msg)
		}
	}
}

// The config file's servers get their variables expanded in every field
// Claude Code expands; an unset one without a default makes the server
// fail with the variable's name, not start with a literal ${…}.
func TestParseFileExpandsVariables(t *testing.T) {
	t.Setenv("H26B_TOKEN", "secret-t")
	t.Setenv("H26B_BIN", "/opt/bin")
	t.Setenv("H26B_UNSET_FOR_TEST", "")
	raw := `{"gh": {"command": "${H26B_BIN}/srv", "args": ["--token=${H26B_TOKEN}", "${H26B_MODE:-ro}"], "env": {"T": "${H26B_TOKEN}"}},
	        "docs": {"url": "https://${H26B_HOST:-docs.example}/mcp", "headers": {"Authorization": "Bearer ${H26B_TOKEN}"}},
	        "bad": {"command": "srv", "env": {"T": "${H26B_NEVER_SET_ANYWHERE}"}}}`
	cfgs, err := ParseFile([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]ServerConfig{}
	for _, c := range cfgs {
		byName[c.Name] = c
	}
	gh := byName["gh"]
	if gh.Invalid != "" || gh.Command != "/opt/bin/srv" || gh.Args[0] != "--token=secret-t" || gh.Args[1] != "ro" || gh.Env[0].Value != "secret-t" {
		t.Errorf("gh = %+v", gh)
	}
	docs := byName["docs"]
	if docs.Invalid != "" || docs.URL != "https://docs.example/mcp" || docs.Headers[0].Value != "Bearer secret-t" {
		t.Errorf("docs = %+v", docs)
	}
	if bad := byName["bad"]; !strings.Contains(bad.Invalid, "H26B_NEVER_SET_ANYWHERE is not set") || !strings.Contains(bad.Invalid, `"bad"`) {
		t.Errorf("bad = %+v", bad)
	}
}
