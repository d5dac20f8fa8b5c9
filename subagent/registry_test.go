package subagent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/permission"
)

func TestNewRegistryBadConfig(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, raw, want string }{
		{"not an object", `[1]`, "must be a JSON object"},
		{"not json", `{`, "subagents:"},
		{"entry not object", `{"x": 3}`, "must be an object"},
		{"no protocol", `{"x": {"command": ["a"]}}`, "protocol is required"},
		{"bad protocol", `{"x": {"protocol": "grpc"}}`, `unknown protocol "grpc"`},
		{"unknown field", `{"x": {"protocol": "acp", "commnd": ["a"]}}`, `unknown field "commnd"`},
		{"empty command", `{"x": {"protocol": "acp", "command": []}}`, "command must not be empty"},
		{"blank argv0", `{"x": {"protocol": "acp", "command": [" "]}}`, "command[0]"},
		{"nul in arg", `{"x": {"protocol": "acp", "command": ["a", "b\u0000"]}}`, "command[1]"},
		{"command not strings", `{"x": {"protocol": "acp", "command": [1]}}`, "subagents.x"},
		{"bad env name", `{"x": {"protocol": "acp", "env": {"A=B": "c"}}}`, `env "A=B"`},
		{"relative cwd", `{"x": {"protocol": "acp", "cwd": "rel/dir"}}`, "must be an absolute path"},
		{"missing cwd", `{"x": {"protocol": "acp", "cwd": "/does/not/exist"}}`, "no such file"},
		{"cwd is file", `{"x": {"protocol": "acp", "cwd": ` + jsonString(file) + `}}`, "is not a directory"},
		{"bad idle", `{"x": {"protocol": "acp", "idleTimeout": "soon"}}`, "not a positive duration"},
		{"negative idle", `{"x": {"protocol": "acp", "idleTimeout": "-1s"}}`, "not a positive duration"},
		{"inproc command", `{"x": {"protocol": "inproc", "command": ["a"]}}`, "takes no command"},
		{"inproc env", `{"x": {"protocol": "inproc", "env": {}}}`, "takes no env"},
		{"inproc pool", `{"inproc": {"pool": true}}`, "no process to pool"},
		{"builtin protocol", `{"dsh-sdk": {"protocol": "acp"}}`, "built-in provider speaks"},
		{"builtin command", `{"dsh-acp": {"command": ["x"]}}`, "takes no command"},
		{"bad name", `{"my agent": {"protocol": "acp"}}`, "may use only letters"},
		{"default not string", `{"default": {"protocol": "acp"}}`, "subagents.default"},
		{"default empty", `{"default": ""}`, "non-empty"},
		{"default unknown", `{"default": "nope"}`, `default provider "nope" is not configured`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewRegistry(json.RawMessage(c.raw), []string{"dsh"}, "")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
	if _, err := NewRegistry(nil, nil, "ghost"); err == nil || !strings.Contains(err.Error(), `"ghost"`) {
		t.Fatalf("unknown defaultName: err = %v", err)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestNewRegistryConfig(t *testing.T) {
	dir := t.TempDir()
	raw := `{
	  "default": "claude",
	  "claude": {"protocol": "acp", "command": ["claude-agent-acp", "--x"], "env": {"K": "v"}, "pool": false},
	  "scratch": {"protocol": "inproc", "cwd": ` + jsonString(dir) + `},
	  "mine": {"protocol": "sdk", "idleTimeout": "90s"},
	  "dsh-sdk": {"pool": false, "env": {"A": "b"}}
	}`
	r, err := NewRegistry(json.RawMessage(raw), []string{"/bin/dsh"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Names(), []string{"claude", "dsh-acp", "dsh-sdk", "inproc", "mine", "scratch"}; !slices.Equal(got, want) {
		t.Fatalf("names = %v, want %v", got, want)
	}
	if r.Default() != "claude" {
		t.Fatalf("default = %q", r.Default())
	}
	c := r.providers["claude"]
	if c.self || c.pool || c.protocol != ProtocolACP || c.command[0] != "claude-agent-acp" || c.env["K"] != "v" {
		t.Fatalf("claude = %+v", c)
	}
	if s := r.providers["scratch"]; s.cwd != dir || s.protocol != ProtocolInproc {
		t.Fatalf("scratch = %+v", s)
	}
	if m := r.providers["mine"]; !m.self || !m.pool || m.idle.Seconds() != 90 {
		t.Fatalf("mine = %+v", m)
	}
	if d := r.providers["dsh-sdk"]; d.pool || !d.self || d.env["A"] != "b" {
		t.Fatalf("dsh-sdk = %+v", d)
	}
	if a := r.providers["dsh-acp"]; !a.pool || !a.self {
		t.Fatalf("dsh-acp = %+v", a)
	}
	// defaultName wins over the config.
	r2, err := NewRegistry(json.RawMessage(raw), nil, "dsh-sdk")
	if err != nil || r2.Default() != "dsh-sdk" {
		t.Fatalf("default = %v, %v", r2, err)
	}
	// Nothing configured: the built-ins, inproc by default.
	r3, err := NewRegistry(json.RawMessage(" null "), nil, "")
	if err != nil || r3.Default() != ProviderInproc || len(r3.Names()) != 3 {
		t.Fatalf("empty config: %v %v", r3, err)
	}
}

func TestChildEnv(t *testing.T) {
	t.Setenv("DEEPSEEK_API_KEY", "sk-secret")
	t.Setenv("OPENAI_API_KEY", "sk-other")
	t.Setenv("GITHUB_TOKEN", "ghp")
	t.Setenv("DSH_SECRET_SETTING", "x")
	t.Setenv("DSH_SESSION_ROOT", "/store")
	t.Setenv("DEEPSEEK_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("PLAIN", "kept")
	r, err := NewRegistry(json.RawMessage(`{"ext": {"protocol": "acp", "command": ["agent"], "env": {"EXT_KEY": "given"}}}`), []string{"dsh"}, "")
	if err != nil {
		t.Fatal(err)
	}
	r.SetDshEnv(map[string]string{"DSH_SCRIPT": "/s.json", "DEEPSEEK_BASE_URL": "http://127.0.0.1:2", "DSH_HOME": ""})
	cfg := event.Config{Provider: "deepseek-official", Model: "deepseek-flash", ReasoningEffort: "high", MaxTokens: 4096}
	asMap := func(env []string) map[string]string {
		m := map[string]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		return m
	}

	own := asMap(r.childEnv(r.providers[ProviderDshSDK], cfg, permission.ModeAsk, 2, "session-parent"))
	want := map[string]string{
		"DEEPSEEK_API_KEY": "sk-secret", "DSH_PROVIDER": "deepseek-official", "DSH_MODEL": "deepseek-flash",
		"DSH_REASONING_EFFORT": "high", "DSH_PERMISSION_MODE": "ask", "DSH_SESSION_ROOT": "/store",
		"DSH_SCRIPT": "/s.json", "DEEPSEEK_BASE_URL": "http://127.0.0.1:2", EnvDelegationDepth: "2", "PLAIN": "kept",
		EnvParentSession: "session-parent", EnvMaxTokens: "4096",
	}
	for k, v := range want {
		if own[k] != v {
			t.Errorf("dsh child: %s = %q, want %q", k, own[k], v)
		}
	}
	for _, k := range []string{"OPENAI_API_KEY", "GITHUB_TOKEN", "DSH_SECRET_SETTING", "DSH_HOME"} {
		if _, ok := own[k]; ok {
			t.Errorf("dsh child: %s passed", k)
		}
	}

	ext := asMap(r.childEnv(r.providers["ext"], cfg, permission.ModeAsk, 1, "session-parent"))
	for _, k := range []string{"DEEPSEEK_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN", "DSH_SECRET_SETTING", "DSH_SESSION_ROOT", "DSH_PROVIDER", EnvMaxTokens} {
		if _, ok := ext[k]; ok {
			t.Errorf("third-party child: %s passed", k)
		}
	}
	if ext["EXT_KEY"] != "given" || ext[EnvDelegationDepth] != "1" || ext["PLAIN"] != "kept" {
		t.Errorf("third-party child env = %v", ext)
	}
}

func TestOutcomeResult(t *testing.T) {
	cases := []struct {
		o    outcome
		err  bool
		want string
	}{
		{outcome{StopReason: StopCompleted, Output: "done"}, false, "done"},
		{outcome{StopReason: StopCompleted}, false, "(the subagent finished without output)"},
		{outcome{StopReason: StopAborted, Diagnostic: "d", Output: "par"}, true,
			"subagent run was cancelled\nDiagnostic: d\nPartial output before the run ended:\npar"},
		{outcome{StopReason: StopError, Diagnostic: "AUTH: bad"}, true, "subagent run failed\nDiagnostic: AUTH: bad"},
		{outcome{StopReason: StopMaxTokens, Output: "x"}, true,
			"subagent run hit its token limit before finishing\nDiagnostic: the child's turn ended max-tokens\nPartial output before the run ended:\nx"},
		{outcome{StopReason: StopRefusal}, true, "subagent declined the task\nDiagnostic: the child's turn ended refusal"},
		{outcome{StopReason: "weird"}, true, "subagent run ended abnormally (weird)\nDiagnostic: the child's turn ended weird"},
	}
	for _, c := range cases {
		r := c.o.result()
		if r.IsError != c.err || resultText(r) != c.want {
			t.Errorf("%+v → %v %q, want %v %q", c.o, r.IsError, resultText(r), c.err, c.want)
		}
	}
}

func TestStopMappings(t *testing.T) {
	te := []struct {
		r    event.TurnEndReason
		stop string
		diag string
	}{
		{event.TurnEndReason{Kind: "completed"}, StopCompleted, ""},
		{event.TurnEndReason{Kind: "max-tokens"}, StopMaxTokens, ""},
		{event.TurnEndReason{Kind: "refusal"}, StopRefusal, ""},
		{event.TurnEndReason{Kind: "aborted", Reason: &event.KindOnly{Kind: "parent"}}, StopAborted, "aborted (parent)"},
		{event.TurnEndReason{Kind: "error", Error: &event.ErrorInfo{Code: "AUTH", Message: "bad key"}}, StopError, "AUTH: bad key"},
		{event.TurnEndReason{Kind: "blocked", Detail: "step cap"}, StopError, "blocked: step cap"},
		{event.TurnEndReason{Kind: "interrupted"}, StopError, "interrupted"},
		{event.TurnEndReason{}, StopError, "without finishing a turn"},
	}
	for _, c := range te {
		stop, diag := fromTurnEnd(c.r)
		if stop != c.stop || !strings.Contains(diag, c.diag) {
			t.Errorf("%+v → %q %q", c.r, stop, diag)
		}
	}
	acpCases := map[string]string{"end_turn": StopCompleted, "max_tokens": StopMaxTokens, "refusal": StopRefusal,
		"cancelled": StopAborted, "max_turn_requests": StopError, "bogus": StopError}
	for in, want := range acpCases {
		if got, _ := fromACPStop(acp.StopReason(in)); got != want {
			t.Errorf("acp %s → %s, want %s", in, got, want)
		}
	}
	if _, diag := fromACPStop("max_turn_requests"); !strings.Contains(diag, "blocked") {
		t.Errorf("max_turn_requests diagnostic %q does not say blocked", diag)
	}
}

func TestResolveSelf(t *testing.T) {
	if got := resolveSelf([]string{"sh", "-x"}); !filepath.IsAbs(got[0]) || got[1] != "-x" {
		t.Fatalf("bare name: %v", got)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "dsh")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if got := resolveSelf([]string{"./dsh"}); got[0] != bin {
		t.Fatalf("relative: %v, want %s", got, bin)
	}
	if got := resolveSelf(nil); len(got) != 0 {
		t.Fatalf("nil: %v", got)
	}
}
