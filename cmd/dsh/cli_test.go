package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/store"
)

// invoke runs one dsh command line in-process with a clean environment.
func invoke(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	for _, k := range []string{"DSH_PROVIDER", "DSH_MODEL", "DSH_CONFIG", "DSH_SESSION_ROOT", "DSH_HOME",
		"DSH_PERMISSION_MODE", "DSH_STEP_CAP", "DSH_REASONING_EFFORT", "DSH_LOG_LEVEL", "DEEPSEEK_API_KEY"} {
		t.Setenv(k, "")
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	var out, errb bytes.Buffer
	code = dispatch(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigErrorsInWords(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"permisionMode": "ask"}`, `unknown key "permisionMode" (did you mean "permissionMode"?)`},
		{`{"base_url": "http://x"}`, `unknown key "base_url" (did you mean "baseUrl"? keys are camelCase)`},
		{`{"apiKey": "sk-1"}`, `API keys are read only from the environment`},
		{`{"stepCap": "many"}`, `"stepCap" must be a whole number, not a string`},
		{`{"model": 5}`, `"model" must be a string, not a number`},
		{`{"model": "m",}`, `not valid JSON at line 1, column`},
		{`[1]`, `want a JSON object of settings, not a list`},
		{`{"zzzzzzzzzz": 1}`, `unknown key "zzzzzzzzzz" (known keys: `},
		{`{"stepCap": 0}`, `step cap must be at least 1, got 0 from config file`},
		{`{"permissionMode": "yolo"}`, `unknown permission mode "yolo" from config file`},
		{`{"mcpServers": {"gh": {"command": "x", "agrs": ["-y"]}}}`, `mcpServers.gh: unknown key "agrs" (did you mean "args"?)`},
		{`{"mcpServers": {"docs": {"url": "http://x", "header": {}}}}`, `mcpServers.docs: unknown key "header" (did you mean "headers"?)`},
		{`{"prices": {"m": {"currency": "USD", "input_cache_hit": 1}}}`, `prices.m: unknown key "input_cache_hit" (did you mean "inputCacheHit"? keys are camelCase)`},
		{`{"subagents": {"default": "x", "claude": {"protocol": "acp", "comand": ["c"]}}}`, `subagents.claude: unknown key "comand" (did you mean "command"?)`},
	} {
		code, _, stderr := invoke(t, "config", "--config", writeConfig(t, tc.body))
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("config %s: exit %d, stderr %q; want exit 2 and %q", tc.body, code, stderr, tc.want)
		}
		if strings.Contains(stderr, "Go struct") || strings.Contains(stderr, "fileConfig") {
			t.Errorf("config %s: Go internals in %q", tc.body, stderr)
		}
	}
}

func TestValuesCheckedBeforeAnything(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--provider", "deepseek"}, `unknown provider "deepseek" from flag --provider (want deepseek-official, openai-compatible, scripted)`},
		{[]string{"--reasoning-effort", "extreme"}, `reasoning effort "extreme" from flag --reasoning-effort is not one deepseek-official takes (want off, minimal, low, medium, high, xhigh, max, ultra)`},
		{[]string{"--step-cap", "0"}, "step cap must be at least 1"},
		{[]string{"--step-cap", "-1"}, "step cap must be at least 1"},
		{[]string{"--step-cap", "x"}, `invalid value "x" for option '--step-cap': want a whole number`},
		{[]string{"--bogus"}, "unknown option '--bogus'"},
		{[]string{"--log-level", "loud"}, `unknown log level "loud"`},
	} {
		args := append([]string{"run", "--session-root", root}, tc.args...)
		code, _, stderr := invoke(t, append(args, "task")...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("a refused command created %d entries in the session root", len(entries))
	}
}

func TestUnknownFlagOneStyle(t *testing.T) {
	for _, cmd := range [][]string{{"run"}, {"sdk"}, {"acp"}, {"sessions", "list"}, {"config"}, {"version"}, {"completion"}} {
		code, _, stderr := invoke(t, append(cmd, "--bogus")...)
		if code != 2 || !strings.Contains(stderr, "unknown option '--bogus'") {
			t.Errorf("%q --bogus: exit %d, stderr %q", cmd, code, stderr)
		}
	}
}

func TestHelpOnEveryCommand(t *testing.T) {
	for _, cmd := range [][]string{{"run"}, {"sdk"}, {"acp"}, {"sessions"}, {"sessions", "list"}, {"sessions", "show"},
		{"sessions", "rm"}, {"config"}, {"version"}, {"completion"}, {}} {
		code, stdout, _ := invoke(t, append(cmd, "--help")...)
		if code != 0 || !strings.Contains(stdout, "Usage:") {
			t.Errorf("%q --help: exit %d, stdout %q", cmd, code, stdout)
		}
	}
	_, stdout, _ := invoke(t, "sessions", "--help")
	for _, sub := range []string{"list", "show", "rm"} {
		if !strings.Contains(stdout, "  "+sub+" ") {
			t.Errorf("dsh sessions --help does not name %q:\n%s", sub, stdout)
		}
	}
}

func TestCommandNamesComplete(t *testing.T) {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	if !slices.Equal(names, commandNames) {
		t.Errorf("commandNames %q, commands %q", commandNames, names)
	}
}

// seedSessions stores sessions with the given ids for cwd under root.
func seedSessions(t *testing.T, root, cwd string, ids ...string) {
	t.Helper()
	st := store.New(root)
	for _, id := range ids {
		lg, err := st.Create(store.Header{ID: id, Cwd: cwd, CreatedAt: time.Now().UTC().Format(time.RFC3339), Origin: "run"})
		if err != nil {
			t.Fatal(err)
		}
		if err := lg.Append(event.Event{Seq: lg.NextSeq(), Type: event.TypeSessionTitle, Time: time.Now().UnixMilli(), Data: json.RawMessage(`{"title":"t"}`)}); err != nil {
			t.Fatal(err)
		}
		if err := lg.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSessionsFlagsAnywhereAndPrefixes(t *testing.T) {
	root, cwd := t.TempDir(), t.TempDir()
	seedSessions(t, root, cwd, "session-abc1", "session-abc2", "session-xyz")
	for _, args := range [][]string{
		{"sessions", "list", "--session-root", root},
		{"--session-root", root, "sessions", "list"},
		{"sessions", "--session-root", root, "list"},
	} {
		code, stdout, stderr := invoke(t, args...)
		if code != 0 || !strings.Contains(stdout, "session-xyz") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	code, stdout, stderr := invoke(t, "sessions", "show", "session-x", "--session-root", root)
	if code != 0 || !strings.HasPrefix(stdout, "session session-xyz\n") {
		t.Errorf("unique prefix: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = invoke(t, "sessions", "show", "session-abc", "--session-root", root)
	if code != 1 || !strings.Contains(stderr, `names 2 sessions: session-abc1, session-abc2`) {
		t.Errorf("ambiguous prefix: exit %d, stderr %q", code, stderr)
	}
	code, stdout, _ = invoke(t, "sessions", "show", "--json", "session-xyz", "--session-root", root)
	var shown struct {
		Header store.Header  `json:"header"`
		Events []event.Event `json:"events"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &shown) != nil || shown.Header.ID != "session-xyz" || len(shown.Events) != 1 {
		t.Errorf("show --json: exit %d, %q", code, stdout)
	}
	code, stdout, _ = invoke(t, "sessions", "list", "--json", "--session-root", root)
	var list []map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &list) != nil || len(list) != 3 {
		t.Fatalf("list --json: exit %d, %q", code, stdout)
	}
	for _, k := range []string{"createdAt", "updatedAt"} {
		if s, ok := list[0][k].(string); !ok || !strings.Contains(s, "T") {
			t.Errorf("list --json %s = %v, want an RFC 3339 time like the other", k, list[0][k])
		}
	}
	if code, _, stderr := invoke(t, "sessions", "rm", "--cwd", cwd, "session-xyz", "--session-root", root); code != 2 {
		t.Errorf("rm --cwd: exit %d, stderr %q; want a usage error", code, stderr)
	}
}

func TestConfigCommandShowsSources(t *testing.T) {
	cfg := writeConfig(t, `{"model": "from-file", "stepCap": 7}`)
	t.Setenv("DEEPSEEK_API_KEY", "sk-secret-value")
	var out, errb bytes.Buffer
	t.Setenv("DSH_PERMISSION_MODE", "ask")
	code := dispatch([]string{"config", "--config", cfg, "--provider", "deepseek-official", "--json"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if strings.Contains(out.String(), "sk-secret-value") {
		t.Fatal("dsh config printed the API key")
	}
	var got map[string]map[string]string
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"provider":       {"deepseek-official", "flag --provider"},
		"model":          {"from-file", "config file"},
		"stepCap":        {"7", "config file"},
		"permissionMode": {"ask", "environment DSH_PERMISSION_MODE"},
		"apiKey":         {"set (masked)", "environment DEEPSEEK_API_KEY"},
		"baseUrl":        {"https://api.deepseek.com", "default"},
	}
	for k, w := range want {
		if got[k]["value"] != w[0] || got[k]["source"] != w[1] {
			t.Errorf("%s = %v, want value %q from %q", k, got[k], w[0], w[1])
		}
	}
}

func TestCompletionScripts(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		code, stdout, stderr := invoke(t, "completion", sh)
		if code != 0 || !strings.Contains(stdout, "session-root") || !strings.Contains(stdout, "sessions") {
			t.Errorf("completion %s: exit %d, stderr %q", sh, code, stderr)
		}
	}
	if code, _, _ := invoke(t, "completion", "tcsh"); code != 2 {
		t.Errorf("completion tcsh: exit %d, want 2", code)
	}
}

// TestExampleConfigShowsEveryKey keeps examples/config.json complete: a key
// added to fileConfig must appear there, and the example must parse.
func TestExampleConfigShowsEveryKey(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parseConfig(path, data); err != nil {
		t.Fatalf("the example config does not parse: %v", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range configKeys() {
		if _, ok := raw[k]; !ok {
			t.Errorf("examples/config.json lacks the key %q: add it so the example shows every key", k)
		}
	}
}

// TestOriginalPermissionModes: the original's launchers set
// DSH_PERMISSION_MODE=workspace-write or danger-full-access; both are
// accepted and shown as the mode they map onto.
func TestOriginalPermissionModes(t *testing.T) {
	for mode, want := range map[string]string{"workspace-write": "auto", "danger-full-access": "full", "read-only": "read-only"} {
		t.Setenv("DSH_PERMISSION_MODE", mode)
		var out, errb bytes.Buffer
		if code := dispatch([]string{"config", "--json"}, nil, &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d: %s", mode, code, errb.String())
		}
		var got map[string]map[string]string
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if got["permissionMode"]["value"] != want {
			t.Errorf("%s shown as %v, want %s", mode, got["permissionMode"], want)
		}
	}
	if code, _, stderr := invoke(t, "config", "--config", writeConfig(t, `{"permissionMode": "yolo"}`)); code != 2 || !strings.Contains(stderr, "workspace-write") {
		t.Errorf("unknown mode: exit %d, stderr %q", code, stderr)
	}
}

// TestConfigCommandShowsEveryKey keeps dsh config complete: every key the
// config file takes has a row.
func TestConfigCommandShowsEveryKey(t *testing.T) {
	code, stdout, stderr := invoke(t, "config", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got map[string]map[string]string
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range configKeys() {
		if _, ok := got[k]; !ok {
			t.Errorf("dsh config has no row for the config key %q: add it to settingRows", k)
		}
	}
}

// TestPatchFlagOfTheOriginalLaunchers: `dsh --profile sdk --patch /abs`
// starts (the newer original launchers pass it); a relative or missing
// path is a usage error.
func TestPatchFlagOfTheOriginalLaunchers(t *testing.T) {
	p := writeConfig(t, "{}")
	if code, _, stderr := invoke(t, "config", "--patch", p); code != 0 {
		t.Errorf("--patch with an absolute file: exit %d, %s", code, stderr)
	}
	if code, _, stderr := invoke(t, "config", "--patch", "rel.json"); code != 2 || !strings.Contains(stderr, "absolute path") {
		t.Errorf("--patch relative: exit %d, %s", code, stderr)
	}
	if code, _, stderr := invoke(t, "config", "--patch", "/nonexistent/x.json"); code != 2 || !strings.Contains(stderr, "no such file") {
		t.Errorf("--patch missing: exit %d, %s", code, stderr)
	}
}

// TestRunImageFlagListed: --image is in `dsh run --help` and in the run
// command's completions.
func TestRunImageFlagListed(t *testing.T) {
	code, stdout, _ := invoke(t, "run", "--help")
	if code != 0 || !strings.Contains(stdout, "[--image PATH]...") || !strings.Contains(stdout, "-image path") {
		t.Errorf("dsh run --help (exit %d) does not show --image:\n%s", code, stdout)
	}
	_, stdout, _ = invoke(t, "completion", "fish")
	if !strings.Contains(stdout, "__fish_seen_subcommand_from run' -l image\n") {
		t.Error("fish completion of dsh run lacks --image")
	}
}

// TestHelpCommandIsCommandHelp: `dsh help CMD [SUB]` prints exactly what
// `dsh CMD [SUB] --help` does; `dsh help` the global help; an unknown
// command is a usage error.
func TestHelpCommandIsCommandHelp(t *testing.T) {
	for _, cmd := range [][]string{{"run"}, {"sdk"}, {"acp"}, {"sessions"}, {"sessions", "show"}, {"sessions", "rm"},
		{"sessions", "compact"}, {"config"}, {"version"}, {"completion"}} {
		code, viaHelp, _ := invoke(t, append([]string{"help"}, cmd...)...)
		_, viaFlag, _ := invoke(t, append(cmd, "--help")...)
		if code != 0 || viaHelp != viaFlag || !strings.Contains(viaHelp, "Usage: dsh "+cmd[0]) {
			t.Errorf("dsh help %q: exit %d\n%s\nwant what --help prints:\n%s", cmd, code, viaHelp, viaFlag)
		}
	}
	code, stdout, _ := invoke(t, "help")
	_, global, _ := invoke(t, "--help")
	if code != 0 || stdout != global {
		t.Errorf("dsh help: exit %d, %q", code, stdout)
	}
	if code, _, stderr := invoke(t, "help", "nope"); code != 2 || !strings.Contains(stderr, `unknown command "nope"`) {
		t.Errorf("dsh help nope: exit %d, stderr %q", code, stderr)
	}
}

// TestVersionFlags: -v and --version print the version line.
func TestVersionFlags(t *testing.T) {
	_, want, _ := invoke(t, "version")
	for _, a := range []string{"-v", "--version"} {
		if code, got, stderr := invoke(t, a); code != 0 || got != want || !strings.HasPrefix(got, "dsh ") {
			t.Errorf("dsh %s: exit %d, stdout %q (want %q), stderr %q", a, code, got, want, stderr)
		}
	}
}

// TestHelpNamesEveryCommand: the global help names every command and the
// help command; the sessions help every sessions verb.
func TestHelpNamesEveryCommand(t *testing.T) {
	_, stdout, _ := invoke(t, "--help")
	for _, name := range append(slices.Clone(commandNames), "help") {
		if !strings.Contains(stdout, "\n  dsh "+name+" ") {
			t.Errorf("dsh --help does not name %q:\n%s", name, stdout)
		}
	}
	_, stdout, _ = invoke(t, "sessions", "--help")
	for verb := range sessionsHelp {
		if !strings.Contains(stdout, "\n  "+verb+" ") || !strings.Contains(usage, verb) {
			t.Errorf("the help does not name sessions %q", verb)
		}
	}
}

// TestConfigSaysFileAndSandboxInForce: dsh config names the file it read
// (or where it looked) and, in permission mode full, that the sandbox is
// off whatever its setting.
func TestConfigSaysFileAndSandboxInForce(t *testing.T) {
	cfg := writeConfig(t, `{"model": "m"}`)
	_, stdout, _ := invoke(t, "config", "--config", cfg)
	if !strings.HasPrefix(stdout, "config file: "+cfg+" (read; named by flag --config)\n") {
		t.Errorf("dsh config --config: %q", stdout)
	}
	_, stdout, _ = invoke(t, "config")
	if !strings.HasPrefix(stdout, "config file: none (no file at ") {
		t.Errorf("dsh config without a file: %q", stdout)
	}
	_, stdout, _ = invoke(t, "config", "--permission-mode", "full")
	if !strings.Contains(stdout, "off: permission mode full runs commands unconfined (setting auto)") {
		t.Errorf("dsh config in mode full does not say the sandbox is off:\n%s", stdout)
	}
	_, stdout, _ = invoke(t, "config", "--sandbox", "off")
	if !strings.Contains(stdout, "off: commands run unconfined") {
		t.Errorf("dsh config --sandbox off:\n%s", stdout)
	}
}
