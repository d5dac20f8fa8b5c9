package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// warnConfig is a config file with one of each warning: a hook event dsh
// does not run and a deny-list entry that names no tool; an MCP entry, a
// conditional tool and a pattern entry that warn of nothing.
var warnConfig = map[string]any{
	"hooks":           map[string]any{"SessionStartt": []any{}},
	"disallowedTools": []string{"nosuch_tool", "mcp__later__x", "skill", "bash(rm *)"},
}

const (
	wantHookWarning = `hooks: event "SessionStartt" is not run by dsh`
	wantListWarning = `disallowed-tools entry "nosuch_tool" matches no tool`
)

// dsh config shows the settings' warnings, in text and in JSON.
func TestConfigShowsWarnings(t *testing.T) {
	warns := configShown(t, warnConfig, nil)["warnings"]["value"]
	if !strings.Contains(warns, wantHookWarning) || !strings.Contains(warns, wantListWarning) {
		t.Errorf("dsh config --json: warnings %q", warns)
	}
	for _, quiet := range []string{"mcp__later__x", `"skill"`, "bash(rm"} {
		if strings.Contains(warns, quiet) {
			t.Errorf("a warning of %s, which may name a tool:\n%s", quiet, warns)
		}
	}
	file := writeConfig(t, mustMarshal(t, warnConfig))
	var out, errb bytes.Buffer
	if code := dispatch([]string{"config", "--config", file}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "\nwarnings:\n") || !strings.Contains(out.String(), wantListWarning) {
		t.Errorf("dsh config: no warnings section:\n%s", out.String())
	}
}

// dsh acp and dsh sdk log the settings' warnings on stderr; stdout stays
// the protocol's (nothing, for a client that sent nothing).
func TestProtocolDoorsLogConfigWarnings(t *testing.T) {
	runConfig(t, nil, nil) // the same clean environment
	file := writeConfig(t, mustMarshal(t, warnConfig))
	for _, door := range []string{"acp", "sdk"} {
		var out, errb bytes.Buffer
		code := dispatch([]string{door, "--config", file, "--session-root", t.TempDir()}, strings.NewReader(""), &out, &errb)
		if code != 0 {
			t.Errorf("dsh %s: exit %d: %s", door, code, errb.String())
		}
		logged := strings.ReplaceAll(errb.String(), `\"`, `"`) // slog's quoting
		if !strings.Contains(logged, wantHookWarning) || !strings.Contains(logged, wantListWarning) {
			t.Errorf("dsh %s: the warnings are not on stderr:\n%s", door, errb.String())
		}
		if out.Len() != 0 {
			t.Errorf("dsh %s: stdout %q, want the protocol's only", door, out.String())
		}
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The keys inside mcpServers, prices and subagents entries are read from
// the structs their parsers decode into: every key each parser takes
// passes the check (one it does not take is refused with a did-you-mean,
// TestConfigErrorsInWords), and the lists hold the keys users write.
func TestEntryKeysAreTheParsersKeys(t *testing.T) {
	for setting, want := range map[string]string{"mcpServers": "args", "prices": "inputCacheHit", "subagents": "idleTimeout"} {
		keys := entryKeys[setting]
		if !slices.Contains(keys, want) {
			t.Errorf("%s: keys %v lack %q", setting, keys, want)
		}
		for _, k := range keys {
			body := fmt.Sprintf(`{%q: {"e": {%q: null}}}`, setting, k)
			if _, err := parseConfig("c.json", []byte(body)); err != nil && strings.Contains(err.Error(), "unknown key") {
				t.Errorf("%s: the parser's own key %q is refused: %v", setting, k, err)
			}
		}
	}
}
