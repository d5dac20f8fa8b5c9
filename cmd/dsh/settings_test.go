package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/model"
)

// settingLevel is where TestSettingsPrecedence gives a setting a value.
type settingLevel int

const (
	levelFlag settingLevel = iota
	levelEnv
	levelFile
	levelDefault
)

// precedenceCase is one setting given a distinct value at each level.
type precedenceCase struct {
	key     string // in the config file and in `dsh config --json`
	flag    []string
	envName string
	env     string
	file    any
	// want is the value shown at each level (flag, env, file, default);
	// source the source shown ("" at default: any source starting "default").
	want [4]string
}

// TestSettingsPrecedence: every setting comes from its flag, else its
// environment variable, else the config file, else the default (ARCHITECTURE.md §3),
// as `dsh config --json` reports it, value and source.
func TestSettingsPrecedence(t *testing.T) {
	efforts := model.Efforts(model.ProviderDeepSeek)
	if len(efforts) < 3 {
		t.Fatalf("deepseek efforts %v: need three to tell the levels apart", efforts)
	}
	dir := t.TempDir()
	abs := func(s string) string { return filepath.Join(dir, s) }
	cases := []precedenceCase{
		{key: "model", flag: []string{"--model", "m-flag"}, envName: "DSH_MODEL", env: "m-env", file: "m-file",
			want: [4]string{"m-flag", "m-env", "m-file", "deepseek-flash"}},
		{key: "permissionMode", flag: []string{"--permission-mode", "full"}, envName: "DSH_PERMISSION_MODE", env: "workspace-write", file: "read-only",
			want: [4]string{"full", "auto", "read-only", ""}},
		{key: "stepCap", flag: []string{"--step-cap", "3"}, envName: "DSH_STEP_CAP", env: "4", file: 5,
			want: [4]string{"3", "4", "5", ""}},
		{key: "reasoningEffort", flag: []string{"--reasoning-effort", efforts[0]}, envName: "DSH_REASONING_EFFORT", env: efforts[1], file: efforts[2],
			want: [4]string{efforts[0], efforts[1], efforts[2], ""}},
		{key: "baseUrl", flag: []string{"--base-url", "http://flag.example"}, envName: "DEEPSEEK_BASE_URL", env: "http://env.example", file: "http://file.example",
			want: [4]string{"http://flag.example", "http://env.example", "http://file.example", "https://api.deepseek.com"}},
		{key: "sessionRoot", flag: []string{"--session-root", abs("flag")}, envName: "DSH_SESSION_ROOT", env: abs("env"), file: abs("file"),
			want: [4]string{abs("flag"), abs("env"), abs("file"), ""}},
		{key: "script", flag: []string{"--script", abs("flag.json")}, envName: "DSH_SCRIPT", env: abs("env.json"), file: abs("file.json"),
			want: [4]string{abs("flag.json"), abs("env.json"), abs("file.json"), ""}},
	}
	sources := [4]string{"flag --", "environment ", "config file", "default"}
	for _, c := range cases {
		for level := levelFlag; level <= levelDefault; level++ {
			var args []string
			env := map[string]string{}
			fileCfg := map[string]any{}
			if level <= levelFlag {
				args = append(args, c.flag...)
			}
			if level <= levelEnv {
				env[c.envName] = c.env
			}
			if level <= levelFile {
				fileCfg[c.key] = c.file
			}
			got := configShown(t, fileCfg, env, args...)[c.key]
			if w := c.want[level]; w != "" && got["value"] != w {
				t.Errorf("%s at level %d: value %q, want %q", c.key, level, got["value"], w)
			}
			if !strings.HasPrefix(got["source"], sources[level]) {
				t.Errorf("%s at level %d: source %q, want %q…", c.key, level, got["source"], sources[level])
			}
		}
	}
}

// TestSessionRootFromDSHHome: DSH_HOME stands for the session root below
// DSH_SESSION_ROOT and above the config file.
func TestSessionRootFromDSHHome(t *testing.T) {
	home := t.TempDir()
	file := map[string]any{"sessionRoot": filepath.Join(home, "from-file")}
	got := configShown(t, file, map[string]string{"DSH_HOME": home})["sessionRoot"]
	if got["value"] != filepath.Join(home, "sessions") || got["source"] != "environment DSH_HOME" {
		t.Errorf("sessionRoot = %v, want %s/sessions from DSH_HOME", got, home)
	}
	got = configShown(t, file, map[string]string{"DSH_HOME": home, "DSH_SESSION_ROOT": filepath.Join(home, "r")})["sessionRoot"]
	if got["source"] != "environment DSH_SESSION_ROOT" {
		t.Errorf("sessionRoot = %v, want DSH_SESSION_ROOT over DSH_HOME", got)
	}
}

// TestConfigFileFromEnvAndFlag: --config beats DSH_CONFIG, which beats the
// default file under XDG_CONFIG_HOME; a named file that is missing is an
// error, a missing default file is not.
func TestConfigFileFromEnvAndFlag(t *testing.T) {
	xdg := t.TempDir()
	write := func(p, model string) string {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"model":"`+model+`"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write(filepath.Join(xdg, "dsh", "config.json"), "m-default-file")
	envFile := write(filepath.Join(t.TempDir(), "env.json"), "m-env-file")
	flagFile := write(filepath.Join(t.TempDir(), "flag.json"), "m-flag-file")
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{map[string]string{"XDG_CONFIG_HOME": xdg}, nil, "m-default-file"},
		{map[string]string{"XDG_CONFIG_HOME": xdg, "DSH_CONFIG": envFile}, nil, "m-env-file"},
		{map[string]string{"XDG_CONFIG_HOME": xdg, "DSH_CONFIG": envFile}, []string{"--config", flagFile}, "m-flag-file"},
	} {
		if got := configShown(t, nil, tc.env, tc.args...)["model"]["value"]; got != tc.want {
			t.Errorf("env %v args %v: model %q, want %q", tc.env, tc.args, got, tc.want)
		}
	}
	code, _, stderr := runConfig(t, nil, map[string]string{"DSH_CONFIG": filepath.Join(xdg, "missing.json")})
	if code != 2 || !strings.Contains(stderr, "missing.json") {
		t.Errorf("a missing DSH_CONFIG file: exit %d, stderr %q; want exit 2 naming it", code, stderr)
	}
	if code, _, stderr := runConfig(t, nil, map[string]string{"XDG_CONFIG_HOME": t.TempDir()}); code != 0 {
		t.Errorf("no default config file: exit %d, stderr %q", code, stderr)
	}
}

// configShown runs `dsh config --json` with the config file (nil: none),
// environment and flags given, and returns what it shows.
func configShown(t *testing.T, file map[string]any, env map[string]string, args ...string) map[string]map[string]string {
	t.Helper()
	code, stdout, stderr := runConfig(t, file, env, args...)
	if code != 0 {
		t.Fatalf("dsh config %v (env %v, file %v): exit %d: %s", args, env, file, code, stderr)
	}
	var got map[string]map[string]string
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("dsh config --json: %v\n%s", err, stdout)
	}
	return got
}

// runConfig is configShown's run, with every setting's variable cleared
// first so only what the test gives counts.
func runConfig(t *testing.T, file map[string]any, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	for _, k := range []string{"DSH_PROVIDER", "DSH_MODEL", "DSH_CONFIG", "DSH_SESSION_ROOT", "DSH_HOME", "DSH_SCRIPT",
		"DSH_PERMISSION_MODE", "DSH_STEP_CAP", "DSH_REASONING_EFFORT", "DSH_LOG_LEVEL", "DEEPSEEK_API_KEY",
		"DEEPSEEK_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "DSH_SANDBOX_HIDE_PATHS"} {
		t.Setenv(k, "")
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for k, v := range env {
		t.Setenv(k, v)
	}
	full := append([]string{"config", "--json"}, args...)
	if file != nil {
		b, err := json.Marshal(file)
		if err != nil {
			t.Fatal(err)
		}
		full = append(full, "--config", writeConfig(t, string(b)))
	}
	var out, errb bytes.Buffer
	code := dispatch(full, nil, &out, &errb)
	return code, out.String(), errb.String()
}

// TestSandboxHidePaths: the config file's sandboxHidePaths and
// DSH_SANDBOX_HIDE_PATHS both add secret places (neither replaces the
// other, nor the built-in ones), ~ is the home, and a relative path is an
// error that names its source.
func TestSandboxHidePaths(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	got := configShown(t, map[string]any{"sandboxHidePaths": []string{"~/secrets", "/srv/keys"}},
		map[string]string{"DSH_SANDBOX_HIDE_PATHS": "/env/a" + string(os.PathListSeparator) + "~/b"})["sandboxHidePaths"]
	want := strings.Join([]string{filepath.Join(home, "secrets"), "/srv/keys", "/env/a", filepath.Join(home, "b")}, ", ")
	if got["value"] != want || got["source"] != "config file + environment DSH_SANDBOX_HIDE_PATHS" {
		t.Errorf("sandboxHidePaths = %v, want %q from both", got, want)
	}
	if got := configShown(t, nil, nil)["sandboxHidePaths"]; got["value"] != "none" || !strings.HasPrefix(got["source"], "default") {
		t.Errorf("no sandboxHidePaths = %v", got)
	}
	code, _, stderr := runConfig(t, map[string]any{"sandboxHidePaths": []string{"relative/x"}}, nil)
	if code == 0 || !strings.Contains(stderr, "relative/x") || !strings.Contains(stderr, "config file") {
		t.Errorf("a relative path: exit %d, %s", code, stderr)
	}
}

// mcpRestarts: the environment over the config file over the default of 3;
// 0 (never) is a value, a negative one is refused naming its source (the
// environment case comes last: t.Setenv lasts to the end of the test).
func TestMCPRestartsSetting(t *testing.T) {
	if got := configShown(t, nil, nil)["mcpRestarts"]; got["value"] != "3" || got["source"] != "default" {
		t.Errorf("default mcpRestarts = %v", got)
	}
	if got := configShown(t, map[string]any{"mcpRestarts": 5}, nil)["mcpRestarts"]; got["value"] != "5" || got["source"] != "config file" {
		t.Errorf("config file mcpRestarts = %v", got)
	}
	code, _, stderr := runConfig(t, map[string]any{"mcpRestarts": -1}, nil)
	if code == 0 || !strings.Contains(stderr, "mcpRestarts") || !strings.Contains(stderr, "config file") {
		t.Errorf("a negative mcpRestarts: exit %d, %s", code, stderr)
	}
	if got := configShown(t, map[string]any{"mcpRestarts": 5}, map[string]string{"DSH_MCP_RESTARTS": "0"})["mcpRestarts"]; got["value"] != "0" ||
		got["source"] != "environment DSH_MCP_RESTARTS" {
		t.Errorf("environment mcpRestarts = %v", got)
	}
	if mcpRestarts(0) >= 0 || mcpRestarts(2) != 2 {
		t.Errorf("0 must mean never to core (negative), got %d", mcpRestarts(0))
	}
}

// The loop thresholds: defaults 4 and 6, from the config file or the
// environment; a warning at or past the stop is refused, naming both.
func TestLoopThresholdSettings(t *testing.T) {
	if got := configShown(t, nil, nil)["loopStopAt"]; got["value"] != "6" || got["source"] != "default" {
		t.Errorf("default loopStopAt = %v", got)
	}
	if got := configShown(t, map[string]any{"loopWarnAt": 3}, nil)["loopWarnAt"]; got["value"] != "3" || got["source"] != "config file" {
		t.Errorf("config file loopWarnAt = %v", got)
	}
	code, _, stderr := runConfig(t, map[string]any{"loopWarnAt": 6}, map[string]string{"DSH_LOOP_STOP_AT": "5"})
	if code == 0 || !strings.Contains(stderr, "loopWarnAt (6, from config file) must be at least 1 and below loopStopAt (5, from environment DSH_LOOP_STOP_AT)") {
		t.Errorf("bad thresholds: exit %d, %s", code, stderr)
	}
}
