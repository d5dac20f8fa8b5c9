package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/core/mcp"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/saferead"
	"github.com/dsh-dev/dsh/core/sandbox"
)

// Settings are the resolved settings of one invocation. Each comes from a
// flag, else the environment, else the config file, else a default
// (ARCHITECTURE.md §3). Source records where each came from, for `--help` and
// diagnostics.
type Settings struct {
	Provider        string
	Model           string
	BaseURL         string
	APIKey          string // environment only, never argv, never logged
	ReasoningEffort string
	MaxTokens       int
	SessionRoot     string
	ConfigPath      string
	PermissionMode  string
	Script          string
	StepCap         int
	// ContextWindow overrides the model's context window (tokens; 0 = the
	// model's); CompactAt is the share of it at which sessions compact.
	ContextWindow    int64
	CompactAt        float64
	FirstDataTimeout time.Duration
	StallTimeout     time.Duration
	// MCPStartWait bounds how long opening a session waits for its MCP
	// servers (DSH_MCP_START_WAIT; core's default when 0).
	MCPStartWait time.Duration
	// MCPRestarts is how often a dying MCP server is restarted within
	// 5 minutes (mcpRestarts, DSH_MCP_RESTARTS; default 3, 0 never).
	MCPRestarts int
	LogLevel    slog.Level
	// Agent holds the agent loop's own limits (agentsettings.go).
	Agent agentLimits
	// Depth is the delegation depth of this process's sessions: a dsh
	// started by another dsh's subagent gateway gets its parent's depth+1
	// in DSH_DELEGATION_DEPTH.
	Depth int
	// DelegatedBy is the delegating session of the dsh whose gateway
	// started this one (DSH_PARENT_SESSION), recorded as the parent of
	// the sessions created here.
	DelegatedBy string
	// Subagents is the raw "subagents" object of the config file.
	Subagents json.RawMessage
	// WebFetchAllowPrivate lets web_fetch reach non-public addresses.
	WebFetchAllowPrivate bool
	// WebSearch declares DeepSeek's server-side web tools: off, on (the
	// deepseek-official provider) or all (OpenAI-compatible endpoints too).
	WebSearch string
	// Sandbox is auto | required | off; SandboxNetwork false turns the
	// network off for commands (core/sandbox).
	Sandbox        string
	SandboxNetwork bool
	// Checkpoints turns the per-turn workspace snapshots on (checkpoints,
	// DSH_CHECKPOINTS; default true); CheckpointMaxFileBytes bounds the
	// files they hold (checkpointMaxFileBytes; default 4 MiB).
	Checkpoints            bool
	CheckpointMaxFileBytes int
	// SandboxHidePaths are secret places added to the built-in ones
	// (absolute, ~ expanded), from the config file and the environment.
	SandboxHidePaths []string
	// SandboxWritablePaths are folders sandboxed commands may write besides
	// the built-in toolchain homes (checked writable at start).
	SandboxWritablePaths []string
	// CommandEnv are the variables (names, NAME* prefixes) commands inherit
	// besides the base set (commandEnv, DSH_COMMAND_ENV).
	CommandEnv []string
	// ToolLists are the allow and deny lists of tools (--allowed-tools,
	// --disallowed-tools, allowedTools, disallowedTools, DSH_ALLOWED_TOOLS,
	// DSH_DISALLOWED_TOOLS).
	ToolLists permission.Lists
	// ToolListsGiven are the lists' entries given outside the config file
	// (environment and flags), as written: what a dsh subagent child is
	// handed through its environment (it reads the same config file).
	ToolListsGiven struct{ Allow, Deny string }
	// MCPServers are the config file's "mcpServers" (an unusable entry is
	// kept with Invalid set, and reported when a session starts).
	MCPServers []mcp.ServerConfig
	// Prices is the raw "prices" object of the config file (read by the
	// ACP door).
	Prices json.RawMessage
	// Hooks is the raw "hooks" object of the config file (the user's
	// hooks); TrustedProjects its "trustedProjects" list.
	Hooks           json.RawMessage
	TrustedProjects []string
	// Patches are the original launchers' --patch files: checked, then
	// ignored with a warning (dsh has no patch mechanism).
	Patches []string
	// Sources says where each setting came from, keyed by its config key:
	// "flag --model", "environment DSH_MODEL", "config file", "default".
	Sources map[string]string
}

// settingFlags holds the flag values of the shared settings.
type settingFlags struct {
	provider, model, baseURL, effort, sessionRoot, config, mode, script, logLevel string
	maxTokens, stepCap                                                            int
	stepCapSet                                                                    bool // --step-cap given, even as 0
	contextWindow, compactAt                                                      string
	patches                                                                       []string
	sandbox, webSearch                                                            string
	allowedTools, disallowedTools                                                 []string
}

// envDoc lists every environment variable dsh reads, for --help.
const envDoc = `Environment:
  DSH_PROVIDER           provider (deepseek-official | openai-compatible | scripted)
  DSH_MODEL              model id (default deepseek-flash)
  DEEPSEEK_API_KEY       API key of deepseek-official (never pass keys on the command line)
  DEEPSEEK_BASE_URL      endpoint of deepseek-official (default https://api.deepseek.com)
  OPENAI_API_KEY         API key of openai-compatible
  OPENAI_BASE_URL        endpoint of openai-compatible (Ollama, vLLM, OpenRouter, ...)
  DSH_REASONING_EFFORT   off | low | high | max (provider default when unset)
  DSH_SESSION_ROOT       session root (else $DSH_HOME/sessions, else $XDG_STATE_HOME/dsh/sessions)
  DSH_HOME               dsh home; sessions go to $DSH_HOME/sessions
  DSH_CONFIG             config file (default $XDG_CONFIG_HOME/dsh/config.json if present)
  DSH_PERMISSION_MODE    read-only | ask | auto | full (the original's workspace-write = auto, danger-full-access = full)
  DSH_SCRIPT             script file of the scripted provider
  DSH_STEP_CAP           steps per turn (default 200)
  DSH_CONTEXT_WINDOW     context window in tokens (default: the model's; DeepSeek 1000000, others 128000)
  DSH_COMPACT_AT         share of the window at which a session compacts (default 0.8)
  DSH_WEB_FETCH_ALLOW_PRIVATE  true lets web_fetch reach loopback and private addresses
  DSH_WEB_SEARCH         off | on | all: DeepSeek's server-side web tools, billed per search (default off)
  DSH_SANDBOX            auto | required | off: contain the commands the model runs (default auto)
  DSH_SANDBOX_NETWORK    false turns the network off for sandboxed commands (default true)
  DSH_SANDBOX_HIDE_PATHS more places sandboxed commands cannot read, ':'-separated (added to the config file's)
  DSH_SANDBOX_WRITABLE_PATHS more folders sandboxed commands may write, ':'-separated (added to the config file's)
  DSH_COMMAND_ENV        more variables commands inherit: names or NAME* prefixes, commas or spaces between
  DSH_ALLOWED_TOOLS      more entries of the allow list, as --allowed-tools takes them (added to the config file's)
  DSH_DISALLOWED_TOOLS   more entries of the deny list, as --disallowed-tools takes them (added to the config file's)
  DSH_FIRST_DATA_TIMEOUT wait for a model's first data, e.g. 11m (default)
  DSH_STALL_TIMEOUT      silence allowed once data flows, e.g. 180s (default)
  DSH_MCP_START_WAIT     how long opening a session waits for its MCP servers, e.g. 10s (default 1.5s)
  DSH_LOG_LEVEL          debug | info | warn | error (stderr diagnostics; default warn)
  DSH_CWD                sdk: default working directory (the original's launchers set it)
  DSH_DELEGATION_DEPTH   delegation depth of this process's sessions (set by a parent dsh's subagent gateway)
`

func registerSettingFlags(fs *flag.FlagSet) *settingFlags {
	f := &settingFlags{}
	fs.Func("patch", "accepted for the original's launchers (--patch /abs/file, repeatable) and ignored with a warning", func(v string) error {
		f.patches = append(f.patches, v)
		return nil
	})
	fs.StringVar(&f.provider, "provider", "", "model provider: deepseek-official | openai-compatible | scripted [$DSH_PROVIDER]")
	fs.StringVar(&f.model, "model", "", "model id (default deepseek-flash) [$DSH_MODEL]")
	fs.StringVar(&f.baseURL, "base-url", "", "model endpoint; requests go to {base}/chat/completions [$DEEPSEEK_BASE_URL / $OPENAI_BASE_URL]")
	fs.StringVar(&f.effort, "reasoning-effort", "", "off | low | high | max [$DSH_REASONING_EFFORT]")
	fs.IntVar(&f.maxTokens, "max-tokens", 0, "output token cap per model call (provider default when 0)")
	fs.StringVar(&f.sessionRoot, "session-root", "", "where session logs live [$DSH_SESSION_ROOT]")
	fs.StringVar(&f.config, "config", "", "config file [$DSH_CONFIG]")
	fs.StringVar(&f.mode, "permission-mode", "", "read-only | ask | auto | full [$DSH_PERMISSION_MODE]")
	fs.StringVar(&f.script, "script", "", "script file of the scripted provider [$DSH_SCRIPT]")
	fs.Func("step-cap", "steps per turn before it ends blocked, at least 1 (default 200) [$DSH_STEP_CAP]", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errors.New("want a whole number")
		}
		f.stepCap, f.stepCapSet = n, true
		return nil
	})
	fs.StringVar(&f.contextWindow, "context-window", "", "context window in tokens (default: the model's) [$DSH_CONTEXT_WINDOW]")
	fs.StringVar(&f.compactAt, "compact-at", "", "share of the window at which a session compacts (default 0.8) [$DSH_COMPACT_AT]")
	fs.StringVar(&f.sandbox, "sandbox", "", "contain the commands the model runs: auto | required | off [$DSH_SANDBOX]")
	fs.StringVar(&f.webSearch, "web-search", "", "DeepSeek's server-side web search and page reading: off | on | all (also OpenAI-compatible endpoints); billed per search (default off) [$DSH_WEB_SEARCH]")
	fs.Func("allowed-tools", "tools that run without asking, in every mode: names or TOOL(PATTERN), commas or spaces between (repeatable) [$DSH_ALLOWED_TOOLS]", func(v string) error {
		f.allowedTools = append(f.allowedTools, v)
		return nil
	})
	fs.Func("disallowed-tools", "tools that are refused, in every mode: names (then not offered to the model at all) or TOOL(PATTERN) (refused when called), commas or spaces between (repeatable) [$DSH_DISALLOWED_TOOLS]", func(v string) error {
		f.disallowedTools = append(f.disallowedTools, v)
		return nil
	})
	fs.StringVar(&f.logLevel, "log-level", "", "stderr diagnostics: debug | info | warn | error [$DSH_LOG_LEVEL]")
	return f
}

// resolver picks each setting from the first place that has it and records
// which place that was.
type resolver struct {
	sources map[string]string
}

// candidate is one place a setting may come from.
type candidate struct{ value, source string }

func fromFlag(name, v string) candidate { return candidate{v, "flag --" + name} }
func fromEnv(name string) candidate     { return candidate{os.Getenv(name), "environment " + name} }
func fromFile(v string) candidate       { return candidate{v, "config file"} }
func byDefault(v string) candidate      { return candidate{v, "default"} }

// pick returns the first non-empty candidate and records its source.
func (r *resolver) pick(key string, cs ...candidate) string {
	for _, c := range cs {
		if c.value != "" {
			r.sources[key] = c.source
			return c.value
		}
	}
	return ""
}

// pickInt is pick for a whole number (0 means unset).
func (r *resolver) pickInt(key string, cs ...candidate) (int, error) {
	v := r.pick(key, cs...)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		label := r.sources[key]
		for _, p := range []string{"environment ", "flag "} {
			if l, ok := strings.CutPrefix(label, p); ok {
				label = l
			}
		}
		if label == "config file" {
			label = "config file " + key
		}
		return 0, fmt.Errorf("%s=%q is not a whole number", label, v)
	}
	return n, nil
}

// optInt renders an optional config number for pick ("" when absent).
func optInt(p *int) string {
	if p == nil {
		return ""
	}
	return strconv.Itoa(*p)
}

func set(m map[string]string, k string) bool { _, ok := m[k]; return ok }

func itoa(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// first returns the first non-empty value.
func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// loadConfig reads the config file named by flag or environment, else the
// default one if present.
func (f *settingFlags) loadConfig(s *Settings) (fileConfig, error) {
	s.ConfigPath = first(f.config, os.Getenv("DSH_CONFIG"))
	explicit := s.ConfigPath != ""
	switch {
	case f.config != "":
		s.Sources["configFile"] = "flag --config"
	case explicit:
		s.Sources["configFile"] = "environment DSH_CONFIG"
	}
	if !explicit {
		if dir := configHome(); dir != "" {
			s.ConfigPath = filepath.Join(dir, "dsh", "config.json")
		}
	}
	if s.ConfigPath == "" {
		return fileConfig{}, nil
	}
	data, err := readConfigFile(s.ConfigPath)
	switch {
	case err == nil:
		return parseConfig(s.ConfigPath, data)
	case errors.Is(err, os.ErrNotExist) && !explicit:
		s.ConfigPath = ""
		return fileConfig{}, nil
	}
	return fileConfig{}, fmt.Errorf("config file: %w", err)
}

// Bounds of reading the config file: it is a few KiB of JSON; more is a
// mistake (DSH_CONFIG=/dev/zero), and so is a wait (a FIFO, a stuck mount).
const (
	maxConfigBytes = 4 << 20
	configTimeout  = 5 * time.Second
)

// readConfigFile reads the config file: a regular file, bounded in size
// and time, so a wrong DSH_CONFIG fails with a clear error at once.
func readConfigFile(path string) ([]byte, error) {
	return saferead.ReadWhole(path, maxConfigBytes, configTimeout)
}

// resolve applies flags → environment → config file → defaults, and checks
// every value before anything is created.
func (f *settingFlags) resolve(defaultMode string) (Settings, error) {
	s := Settings{Sources: map[string]string{}}
	r := &resolver{sources: s.Sources}
	fc, err := f.loadConfig(&s)
	if err != nil {
		return s, err
	}
	s.Subagents = fc.Subagents
	s.Prices = fc.Prices
	s.Hooks, s.TrustedProjects = fc.Hooks, fc.TrustedProjects
	if s.MCPServers, err = mcp.ParseFile(fc.MCPServers); err != nil {
		return s, fmt.Errorf("config file %s: %w", s.ConfigPath, err)
	}
	s.Provider = r.pick("provider", fromFlag("provider", f.provider), fromEnv("DSH_PROVIDER"), fromFile(fc.Provider), byDefault("deepseek-official"))
	if !slices.Contains(model.Names(), s.Provider) {
		return s, fmt.Errorf("unknown provider %q from %s (want %s)", s.Provider, s.Sources["provider"], strings.Join(model.Names(), ", "))
	}
	s.Model = r.pick("model", fromFlag("model", f.model), fromEnv("DSH_MODEL"), fromFile(fc.Model), byDefault("deepseek-flash"))
	f.resolveEndpoint(r, &s, fc)
	s.ReasoningEffort = r.pick("reasoningEffort", fromFlag("reasoning-effort", f.effort), fromEnv("DSH_REASONING_EFFORT"), fromFile(fc.ReasoningEffort))
	if e := s.ReasoningEffort; e != "" && !slices.Contains(model.Efforts(s.Provider), e) {
		return s, fmt.Errorf("reasoning effort %q from %s is not one %s takes (want %s)", e, s.Sources["reasoningEffort"], s.Provider, strings.Join(model.Efforts(s.Provider), ", "))
	}
	if s.MaxTokens, err = r.pickInt("maxTokens", fromFlag("max-tokens", itoa(f.maxTokens)), fromEnv("DSH_MAX_TOKENS"), fromFile(optInt(fc.MaxTokens))); err != nil {
		return s, err
	}
	if _, set := s.Sources["maxTokens"]; set && s.MaxTokens < 1 {
		return s, fmt.Errorf("max tokens must be a positive whole number, got %d from %s", s.MaxTokens, s.Sources["maxTokens"])
	}
	if !set(s.Sources, "maxTokens") {
		r.sources["maxTokens"] = "default (the provider's)"
	}
	if err := f.resolveRoot(r, &s, fc); err != nil {
		return s, err
	}
	s.PermissionMode = r.pick("permissionMode", fromFlag("permission-mode", f.mode), fromEnv("DSH_PERMISSION_MODE"), fromFile(fc.PermissionMode), byDefault(defaultMode))
	mode, err := permission.ParseMode(s.PermissionMode)
	if err != nil {
		return s, fmt.Errorf("unknown permission mode %q from %s (want read-only, ask, auto or full, or the original's workspace-write or danger-full-access)", s.PermissionMode, s.Sources["permissionMode"])
	}
	s.PermissionMode = string(mode)
	s.Script = r.pick("script", fromFlag("script", f.script), fromEnv("DSH_SCRIPT"), fromFile(fc.Script))
	stepFlag := ""
	if f.stepCapSet {
		stepFlag = strconv.Itoa(f.stepCap)
	}
	if s.StepCap, err = r.pickInt("stepCap", fromFlag("step-cap", stepFlag), fromEnv("DSH_STEP_CAP"), fromFile(optInt(fc.StepCap))); err != nil {
		return s, err
	}
	if _, set := s.Sources["stepCap"]; set && s.StepCap < 1 {
		return s, fmt.Errorf("step cap must be at least 1, got %d from %s", s.StepCap, s.Sources["stepCap"])
	}
	if s.StepCap == 0 {
		r.sources["stepCap"] = "default (200)"
	}
	return s, f.resolveRest(r, &s, fc)
}

// resolveEndpoint picks the base URL and API key of the provider.
func (f *settingFlags) resolveEndpoint(r *resolver, s *Settings, fc fileConfig) {
	switch s.Provider {
	case "openai-compatible":
		s.BaseURL = r.pick("baseUrl", fromFlag("base-url", f.baseURL), fromEnv("OPENAI_BASE_URL"), fromFile(fc.BaseURL))
		s.APIKey = r.pick("apiKey", fromEnv("OPENAI_API_KEY"))
	default:
		s.BaseURL = r.pick("baseUrl", fromFlag("base-url", f.baseURL), fromEnv("DEEPSEEK_BASE_URL"), fromFile(fc.BaseURL), byDefault("https://api.deepseek.com"))
		s.APIKey = r.pick("apiKey", fromEnv("DEEPSEEK_API_KEY"))
	}
}

// resolveRoot picks the session root and makes it absolute.
func (f *settingFlags) resolveRoot(r *resolver, s *Settings, fc fileConfig) error {
	home := ""
	if h := os.Getenv("DSH_HOME"); h != "" {
		home = filepath.Join(h, "sessions")
	}
	root := r.pick("sessionRoot", fromFlag("session-root", f.sessionRoot), fromEnv("DSH_SESSION_ROOT"),
		candidate{home, "environment DSH_HOME"}, fromFile(fc.SessionRoot))
	if root == "" {
		state := os.Getenv("XDG_STATE_HOME")
		if state == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return fmt.Errorf("no session root: set --session-root or DSH_SESSION_ROOT (%w)", err)
			}
			state = filepath.Join(h, ".local", "state")
		}
		root = filepath.Join(state, "dsh", "sessions")
		r.sources["sessionRoot"] = "default"
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return fmt.Errorf("session root %q: %w", root, err)
	}
	s.SessionRoot = abs
	return nil
}

// resolveRest picks the settings that have no config key of their own.
func (f *settingFlags) resolveRest(r *resolver, s *Settings, fc fileConfig) error {
	var err error
	if s.ContextWindow, s.CompactAt, err = f.resolveContext(r, fc); err != nil {
		return err
	}
	if s.FirstDataTimeout, err = envDuration("DSH_FIRST_DATA_TIMEOUT"); err != nil {
		return err
	}
	if s.StallTimeout, err = envDuration("DSH_STALL_TIMEOUT"); err != nil {
		return err
	}
	if s.MCPStartWait, err = envDuration("DSH_MCP_START_WAIT"); err != nil {
		return err
	}
	if s.MCPRestarts, err = r.pickInt("mcpRestarts", fromEnv("DSH_MCP_RESTARTS"), fromFile(optInt(fc.MCPRestarts)), byDefault("3")); err != nil {
		return err
	}
	if s.MCPRestarts < 0 {
		return fmt.Errorf("mcpRestarts must be 0 or more, got %d from %s", s.MCPRestarts, s.Sources["mcpRestarts"])
	}
	if s.Agent, err = resolveAgentLimits(r, fc); err != nil {
		return err
	}
	if v := os.Getenv("DSH_DELEGATION_DEPTH"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("DSH_DELEGATION_DEPTH=%q is not a non-negative integer", v)
		}
		s.Depth = n
	}
	s.DelegatedBy = strings.TrimSpace(os.Getenv("DSH_PARENT_SESSION"))
	allow := ""
	if fc.WebFetchAllowPrivate != nil {
		allow = strconv.FormatBool(*fc.WebFetchAllowPrivate)
	}
	if v := r.pick("webFetchAllowPrivate", fromEnv("DSH_WEB_FETCH_ALLOW_PRIVATE"), fromFile(allow), byDefault("false")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("webFetchAllowPrivate %q from %s is not true or false", v, s.Sources["webFetchAllowPrivate"])
		}
		s.WebFetchAllowPrivate = b
	}
	for _, p := range f.patches {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("--patch %q: want an absolute path, as the original's launchers pass", p)
		}
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("--patch: %w", err)
		}
	}
	s.Patches = f.patches
	if err := f.resolveWebSearch(r, s, fc); err != nil {
		return err
	}
	if err := f.resolveSandbox(r, s, fc); err != nil {
		return err
	}
	if err := f.resolveDaily(r, s, fc); err != nil {
		return err
	}
	s.LogLevel = slog.LevelWarn
	lv := r.pick("logLevel", fromFlag("log-level", f.logLevel), fromEnv("DSH_LOG_LEVEL"), fromFile(fc.LogLevel), byDefault("warn"))
	if err := s.LogLevel.UnmarshalText([]byte(strings.ToUpper(lv))); err != nil {
		return fmt.Errorf("unknown log level %q from %s (want debug, info, warn or error)", lv, s.Sources["logLevel"])
	}
	return nil
}

func envDuration(name string) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q is not a positive duration such as 30s", name, v)
	}
	return d, nil
}

func configHome() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".config")
}

// resolveContext resolves contextWindow and compactAt. A window must be a
// positive whole number of tokens and compactAt a share in (0, 1]; anything
// else is an error at start.
func (f *settingFlags) resolveContext(r *resolver, fc fileConfig) (int64, float64, error) {
	var window int64
	var at float64
	where := func(key string) string {
		if src := r.sources[key]; src != "config file" {
			return src
		}
		return "config key " + key
	}
	if v := r.pick("contextWindow", fromFlag("context-window", f.contextWindow), fromEnv("DSH_CONTEXT_WINDOW"), fromFile(optFloat(fc.ContextWindow))); v != "" {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n <= 0 || n != float64(int64(n)) || n > 1<<40 {
			return 0, 0, fmt.Errorf("context window %q from %s is not a context window: give a positive whole number of tokens, e.g. 128000", v, where("contextWindow"))
		}
		window = int64(n)
	}
	if v := r.pick("compactAt", fromFlag("compact-at", f.compactAt), fromEnv("DSH_COMPACT_AT"), fromFile(optFloat(fc.CompactAt))); v != "" {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || !(n > 0 && n <= 1) {
			return 0, 0, fmt.Errorf("compactAt %q from %s is not a compaction threshold: give a share of the window above 0 and at most 1, e.g. 0.8", v, where("compactAt"))
		}
		at = n
	}
	return window, at, nil
}

// optFloat renders an optional config number for pick ("" when absent).
func optFloat(p *float64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}

// resolveWebSearch picks webSearch (flag, env, file, off). The file takes
// true and false too.
func (f *settingFlags) resolveWebSearch(r *resolver, s *Settings, fc fileConfig) error {
	file := ""
	if len(fc.WebSearch) > 0 {
		var b bool
		if json.Unmarshal(fc.WebSearch, &b) == nil {
			file = strconv.FormatBool(b)
		} else if json.Unmarshal(fc.WebSearch, &file) != nil {
			return fmt.Errorf(`webSearch in the config file must be "off", "on", "all", true or false`)
		}
	}
	v := r.pick("webSearch", fromFlag("web-search", f.webSearch), fromEnv("DSH_WEB_SEARCH"), fromFile(file), byDefault("off"))
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "off", "false":
		s.WebSearch = "off"
	case "on", "true":
		s.WebSearch = "on"
	case "all":
		s.WebSearch = "all"
	default:
		return fmt.Errorf("webSearch %q from %s: want off, on (DeepSeek's provider) or all (OpenAI-compatible endpoints too)", v, r.sources["webSearch"])
	}
	return nil
}

// resolveSandbox picks sandbox (flag, env, file, auto) and sandboxNetwork
// (env, file, true).
func (f *settingFlags) resolveSandbox(r *resolver, s *Settings, fc fileConfig) error {
	v := r.pick("sandbox", fromFlag("sandbox", f.sandbox), fromEnv("DSH_SANDBOX"), fromFile(fc.Sandbox), byDefault("auto"))
	if _, err := sandbox.ParseSetting(v); err != nil {
		return fmt.Errorf("%w (from %s)", err, s.Sources["sandbox"])
	}
	s.Sandbox = v
	file := ""
	if fc.SandboxNetwork != nil {
		file = strconv.FormatBool(*fc.SandboxNetwork)
	}
	v = r.pick("sandboxNetwork", fromEnv("DSH_SANDBOX_NETWORK"), fromFile(file), byDefault("true"))
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("sandboxNetwork %q from %s is not true or false", v, s.Sources["sandboxNetwork"])
	}
	s.SandboxNetwork = b
	if err := resolveCheckpoints(r, s, fc); err != nil {
		return err
	}
	return resolveHidePaths(r, s, fc)
}

// resolveCheckpoints picks checkpoints (env, file, true) and
// checkpointMaxFileBytes (file, 4 MiB).
func resolveCheckpoints(r *resolver, s *Settings, fc fileConfig) error {
	file := ""
	if fc.Checkpoints != nil {
		file = strconv.FormatBool(*fc.Checkpoints)
	}
	v := r.pick("checkpoints", fromEnv("DSH_CHECKPOINTS"), fromFile(file), byDefault("true"))
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("checkpoints %q from %s is not true or false", v, s.Sources["checkpoints"])
	}
	s.Checkpoints = b
	n, err := r.pickInt("checkpointMaxFileBytes", fromFile(optInt(fc.CheckpointMaxFileBytes)), byDefault("4194304"))
	if err != nil {
		return err
	}
	if n < 1 {
		return fmt.Errorf("checkpointMaxFileBytes must be 1 or more, got %d from %s", n, s.Sources["checkpointMaxFileBytes"])
	}
	s.CheckpointMaxFileBytes = n
	return nil
}

// resolveHidePaths adds up sandboxHidePaths from the config file and
// DSH_SANDBOX_HIDE_PATHS: secret places are only ever added, so no source
// overrides another (nor the built-in ones).
func resolveHidePaths(r *resolver, s *Settings, fc fileConfig) error {
	type list struct {
		paths  []string
		source string
	}
	env := os.Getenv("DSH_SANDBOX_HIDE_PATHS")
	var sources []string
	for _, l := range []list{{fc.SandboxHidePaths, "config file"}, {filepath.SplitList(env), "environment DSH_SANDBOX_HIDE_PATHS"}} {
		for _, p := range l.paths {
			abs, err := expandHome(p)
			if err != nil {
				return fmt.Errorf("sandboxHidePaths %q from %s: %w", p, l.source, err)
			}
			s.SandboxHidePaths = append(s.SandboxHidePaths, abs)
		}
		if len(l.paths) > 0 {
			sources = append(sources, l.source)
		}
	}
	r.sources["sandboxHidePaths"] = "default"
	if len(sources) > 0 {
		r.sources["sandboxHidePaths"] = strings.Join(sources, " + ")
	}
	return nil
}

// expandHome turns ~ and ~/x into the home's and insists on an absolute
// path (a relative one would depend on where dsh starts).
func expandHome(p string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home folder for ~: %w", err)
		}
		p = filepath.Join(home, p[1:])
	}
	if !filepath.IsAbs(p) {
		return "", errors.New("not an absolute path (or ~/…)")
	}
	return filepath.Clean(p), nil
}
