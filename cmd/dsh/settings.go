package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Settings are the resolved settings of one invocation. Each comes from a
// flag, else the environment, else the config file, else a default
// (DESIGN.md §3). Source records where each came from, for `--help` and
// diagnostics.
type Settings struct {
	Provider         string
	Model            string
	BaseURL          string
	APIKey           string // environment only, never argv, never logged
	ReasoningEffort  string
	MaxTokens        int
	SessionRoot      string
	ConfigPath       string
	PermissionMode   string
	Script           string
	StepCap          int
	FirstDataTimeout time.Duration
	StallTimeout     time.Duration
	LogLevel         slog.Level
	// Depth is the delegation depth of this process's sessions: a dsh
	// started by another dsh's subagent gateway gets its parent's depth+1
	// in DSH_DELEGATION_DEPTH.
	Depth int
	// Subagents is the raw "subagents" object of the config file.
	Subagents json.RawMessage
}

// fileConfig is the config file's shape.
type fileConfig struct {
	Provider        string          `json:"provider"`
	Model           string          `json:"model"`
	BaseURL         string          `json:"baseUrl"`
	ReasoningEffort string          `json:"reasoningEffort"`
	MaxTokens       int             `json:"maxTokens"`
	SessionRoot     string          `json:"sessionRoot"`
	PermissionMode  string          `json:"permissionMode"`
	Script          string          `json:"script"`
	StepCap         int             `json:"stepCap"`
	Subagents       json.RawMessage `json:"subagents"`
}

// settingFlags holds the flag values of the shared settings.
type settingFlags struct {
	provider, model, baseURL, effort, sessionRoot, config, mode, script, logLevel string
	maxTokens, stepCap                                                            int
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
  DSH_PERMISSION_MODE    read-only | ask | auto | full
  DSH_SCRIPT             script file of the scripted provider
  DSH_STEP_CAP           steps per turn (default 200)
  DSH_FIRST_DATA_TIMEOUT wait for a model's first data, e.g. 11m (default)
  DSH_STALL_TIMEOUT      silence allowed once data flows, e.g. 180s (default)
  DSH_LOG_LEVEL          debug | info | warn | error (stderr diagnostics; default warn)
  DSH_CWD                sdk: default working directory (the original's launchers set it)
  DSH_DELEGATION_DEPTH   delegation depth of this process's sessions (set by a parent dsh's subagent gateway)
`

func registerSettingFlags(fs *flag.FlagSet) *settingFlags {
	f := &settingFlags{}
	fs.StringVar(&f.provider, "provider", "", "model provider: deepseek-official | openai-compatible | scripted [$DSH_PROVIDER]")
	fs.StringVar(&f.model, "model", "", "model id (default deepseek-flash) [$DSH_MODEL]")
	fs.StringVar(&f.baseURL, "base-url", "", "model endpoint; requests go to {base}/chat/completions [$DEEPSEEK_BASE_URL / $OPENAI_BASE_URL]")
	fs.StringVar(&f.effort, "reasoning-effort", "", "off | low | high | max [$DSH_REASONING_EFFORT]")
	fs.IntVar(&f.maxTokens, "max-tokens", 0, "output token cap per model call (provider default when 0)")
	fs.StringVar(&f.sessionRoot, "session-root", "", "where session logs live [$DSH_SESSION_ROOT]")
	fs.StringVar(&f.config, "config", "", "config file [$DSH_CONFIG]")
	fs.StringVar(&f.mode, "permission-mode", "", "read-only | ask | auto | full [$DSH_PERMISSION_MODE]")
	fs.StringVar(&f.script, "script", "", "script file of the scripted provider [$DSH_SCRIPT]")
	fs.IntVar(&f.stepCap, "step-cap", 0, "steps per turn before it ends blocked (default 200) [$DSH_STEP_CAP]")
	fs.StringVar(&f.logLevel, "log-level", "", "stderr diagnostics: debug | info | warn | error [$DSH_LOG_LEVEL]")
	return f
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

// resolve applies flags → environment → config file → defaults.
func (f *settingFlags) resolve(defaultMode string) (Settings, error) {
	var s Settings
	s.ConfigPath = first(f.config, os.Getenv("DSH_CONFIG"))
	explicitConfig := s.ConfigPath != ""
	if s.ConfigPath == "" {
		if dir := configHome(); dir != "" {
			s.ConfigPath = filepath.Join(dir, "dsh", "config.json")
		}
	}
	var fc fileConfig
	if s.ConfigPath != "" {
		data, err := os.ReadFile(s.ConfigPath)
		switch {
		case err == nil:
			if err := json.Unmarshal(data, &fc); err != nil {
				return s, fmt.Errorf("config file %s: %w", s.ConfigPath, err)
			}
		case errors.Is(err, os.ErrNotExist) && !explicitConfig:
			s.ConfigPath = ""
		default:
			return s, fmt.Errorf("config file: %w", err)
		}
	}
	s.Subagents = fc.Subagents
	s.Provider = first(f.provider, os.Getenv("DSH_PROVIDER"), fc.Provider, "deepseek-official")
	s.Model = first(f.model, os.Getenv("DSH_MODEL"), fc.Model, "deepseek-flash")
	switch s.Provider {
	case "openai-compatible":
		s.BaseURL = first(f.baseURL, os.Getenv("OPENAI_BASE_URL"), fc.BaseURL)
		s.APIKey = os.Getenv("OPENAI_API_KEY")
	default:
		s.BaseURL = first(f.baseURL, os.Getenv("DEEPSEEK_BASE_URL"), fc.BaseURL, "https://api.deepseek.com")
		s.APIKey = os.Getenv("DEEPSEEK_API_KEY")
	}
	s.ReasoningEffort = first(f.effort, os.Getenv("DSH_REASONING_EFFORT"), fc.ReasoningEffort)
	s.MaxTokens = f.maxTokens
	if s.MaxTokens == 0 {
		s.MaxTokens = fc.MaxTokens
	}
	if s.MaxTokens < 0 {
		return s, fmt.Errorf("--max-tokens must be a positive integer")
	}
	root := first(f.sessionRoot, os.Getenv("DSH_SESSION_ROOT"))
	if root == "" && os.Getenv("DSH_HOME") != "" {
		root = filepath.Join(os.Getenv("DSH_HOME"), "sessions")
	}
	root = first(root, fc.SessionRoot)
	if root == "" {
		state := os.Getenv("XDG_STATE_HOME")
		if state == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return s, fmt.Errorf("no session root: set --session-root or DSH_SESSION_ROOT (%w)", err)
			}
			state = filepath.Join(home, ".local", "state")
		}
		root = filepath.Join(state, "dsh", "sessions")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return s, fmt.Errorf("session root %q: %w", root, err)
	}
	s.SessionRoot = abs
	s.PermissionMode = first(f.mode, os.Getenv("DSH_PERMISSION_MODE"), fc.PermissionMode, defaultMode)
	switch s.PermissionMode {
	case "read-only", "ask", "auto", "full":
	default:
		return s, fmt.Errorf("unknown permission mode %q (want read-only, ask, auto or full)", s.PermissionMode)
	}
	s.Script = first(f.script, os.Getenv("DSH_SCRIPT"), fc.Script)
	s.StepCap = f.stepCap
	if s.StepCap == 0 {
		if v := os.Getenv("DSH_STEP_CAP"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return s, fmt.Errorf("DSH_STEP_CAP=%q is not a positive integer", v)
			}
			s.StepCap = n
		} else {
			s.StepCap = fc.StepCap
		}
	}
	if s.FirstDataTimeout, err = envDuration("DSH_FIRST_DATA_TIMEOUT"); err != nil {
		return s, err
	}
	if s.StallTimeout, err = envDuration("DSH_STALL_TIMEOUT"); err != nil {
		return s, err
	}
	if v := os.Getenv("DSH_DELEGATION_DEPTH"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return s, fmt.Errorf("DSH_DELEGATION_DEPTH=%q is not a non-negative integer", v)
		}
		s.Depth = n
	}
	s.LogLevel = slog.LevelWarn
	if lv := first(f.logLevel, os.Getenv("DSH_LOG_LEVEL")); lv != "" {
		if err := s.LogLevel.UnmarshalText([]byte(strings.ToUpper(lv))); err != nil {
			return s, fmt.Errorf("unknown log level %q", lv)
		}
	}
	return s, nil
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
