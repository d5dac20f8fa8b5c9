package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/dsh-dev/dsh/cmd/internal/argv"
	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/ext"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/saferead"
	"github.com/dsh-dev/dsh/core/sandbox"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/core/tool"
	"github.com/dsh-dev/dsh/subagent"
)

// prefixWriter prefixes every line written to w with "dsh: ", so stderr
// carries only dsh: diagnostics (the headless contract).
type prefixWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		out.WriteString("dsh: ")
		out.Write(line)
	}
	if _, err := p.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
}

func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(&prefixWriter{w: w}, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// providerOptions returns the options of a provider by name: the resolved
// settings for the configured provider, the environment for another one
// (an SDK host may initialize with a different provider).
func providerOptions(s Settings, name string) model.Options {
	opts := model.Options{ScriptPath: s.Script, FirstDataTimeout: s.FirstDataTimeout, StallTimeout: s.StallTimeout,
		WebTools: s.WebSearch == "on" || s.WebSearch == "all", WebToolsAnyEndpoint: s.WebSearch == "all"}
	if name == s.Provider {
		opts.BaseURL, opts.APIKey = s.BaseURL, s.APIKey
		return opts
	}
	switch name {
	case "openai-compatible":
		opts.BaseURL, opts.APIKey = os.Getenv("OPENAI_BASE_URL"), os.Getenv("OPENAI_API_KEY")
	case "deepseek-official":
		opts.BaseURL, opts.APIKey = first(os.Getenv("DEEPSEEK_BASE_URL"), "https://api.deepseek.com"), os.Getenv("DEEPSEEK_API_KEY")
	}
	return opts
}

// runtime is a wired core runtime and the subagent gateway it delegates
// through; close it with shutdownRuntime.
type runtime struct {
	*core.Runtime
	gateway *subagent.Registry
	stopLog func()
	// sandbox contains the commands the model runs, under the reaper of
	// binary self; the ACP door tells each session what it cannot contain
	// here, and runs an editor terminal's commands under it too.
	sandbox *sandbox.Sandbox
	self    string
	// noticed is closed once the sandbox's probe is done and its notice,
	// if any, logged (shutdown waits for it: the notice is told once).
	noticed <-chan struct{}
}

// containTerminal is acp.Options.ContainTerminal: the reaper of this
// binary over the command, with the sandbox's policy for scope sc.
func (rt *runtime) containTerminal(sc sandbox.Scope, argv []string) ([]string, []string, error) {
	return rt.sandbox.Standalone(rt.self, sc, argv)
}

// buildRuntime wires a core runtime from settings, with the subagent tool.
func buildRuntime(s Settings, origin string, logger *slog.Logger) (*runtime, error) {
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0]
	}
	for _, p := range s.Patches {
		logger.Warn("ignoring --patch: dsh has no patch mechanism (accepted so the original's launchers start it unchanged)", "file", p)
	}
	prices, err := core.ParsePrices(s.Prices)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", s.ConfigPath, err)
	}
	sb, noticed := newSandbox(s, self, logger)
	rt, err := core.New(core.Config{
		Prices: prices,
		// Every command the model runs goes through this executor, under
		// the reaper (this binary): nothing it starts outlives the call.
		Exec:      tool.LocalExecWith(tool.LocalExecOptions{Reaper: self, Sandbox: sb}),
		BaseDepth: s.Depth, DelegatedBy: s.DelegatedBy,
		Store: store.New(s.SessionRoot),
		NewProvider: func(name string) (model.Provider, error) {
			return model.New(name, providerOptions(s, name))
		},
		Defaults:       event.Config{Provider: s.Provider, Model: s.Model, ReasoningEffort: s.ReasoningEffort, MaxTokens: s.MaxTokens},
		PermissionMode: permission.Mode(s.PermissionMode),
		Tools:          tool.WithSandbox(tool.BuiltinsWith(tool.Options{WebFetch: tool.WebFetchOptions{AllowPrivate: s.WebFetchAllowPrivate, NetworkOff: networkOff(s)}, CommandEnv: s.CommandEnv}), sb),
		StepCap:        s.StepCap,
		LoopWarnAt:     s.Agent.LoopWarnAt,
		LoopStopAt:     s.Agent.LoopStopAt,
		BashYield:      s.Agent.bashYield(),
		RetryBudget:    s.Agent.retryBudget(),
		// The user's own AGENTS.md, put before the project's in every
		// context message.
		UserInstructions: userInstructions(),
		SecretPaths:      secretPlaces(s),
		ContextWindow:    s.ContextWindow,
		CompactAt:        s.CompactAt,
		Origin:           origin,
		Logger:           logger,
		MCPServers:       s.MCPServers,
		MCPStartWait:     s.MCPStartWait,
		MCPRestarts:      mcpRestarts(s.MCPRestarts),
		ToolLists:        s.ToolLists,
		NetworkOff:       networkOff(s),
		Version:          version,
		Extensions:       extensions(s, logger),
		Checkpoints:      core.CheckpointConfig{Off: !s.Checkpoints, MaxFileBytes: int64(s.CheckpointMaxFileBytes)},
	})
	if err != nil {
		return nil, err
	}
	reg, err := subagent.NewRegistry(s.Subagents, []string{self}, "")
	if err != nil {
		return nil, fmt.Errorf("config file %s: subagents: %w", s.ConfigPath, err)
	}
	reg.SetLogger(logger)
	// Children of this binary reach the same model and store as we do.
	childEnv := map[string]string{"DSH_SESSION_ROOT": s.SessionRoot, "DSH_SCRIPT": s.Script, "DSH_CONFIG": s.ConfigPath}
	if s.StepCap > 0 { // else the child resolves it as we did (env, config)
		childEnv["DSH_STEP_CAP"] = strconv.Itoa(s.StepCap)
	}
	if s.ContextWindow > 0 {
		childEnv["DSH_CONTEXT_WINDOW"] = strconv.FormatInt(s.ContextWindow, 10)
	}
	if s.CompactAt > 0 {
		childEnv["DSH_COMPACT_AT"] = strconv.FormatFloat(s.CompactAt, 'g', -1, 64)
	}
	// What limits the children as it limits us, whether it came from a
	// flag, the environment or the config file: the sandbox setting and
	// the tool lists' entries given outside the file (the child reads the
	// same file). A child never runs with less containment than we do.
	childEnv["DSH_SANDBOX"] = s.Sandbox
	childEnv["DSH_ALLOWED_TOOLS"] = s.ToolListsGiven.Allow
	childEnv["DSH_DISALLOWED_TOOLS"] = s.ToolListsGiven.Deny
	// A dsh child searches the web (and is billed for it) as we do.
	childEnv["DSH_WEB_SEARCH"] = s.WebSearch
	if s.Provider == "openai-compatible" {
		childEnv["OPENAI_BASE_URL"] = s.BaseURL
	} else {
		childEnv["DEEPSEEK_BASE_URL"] = s.BaseURL
	}
	reg.SetDshEnv(childEnv)
	rt.RegisterTool(subagent.NewTool(rt, reg))
	return &runtime{Runtime: rt, gateway: reg, stopLog: startEventLog(rt, logger), sandbox: sb, self: self, noticed: noticed}, nil
}

// parseCommon parses a command's flags (shared settings plus extra) in the
// one grammar of package argv and resolves the settings. It returns the exit
// code to use when parsing ended the command (help: 0, usage error: 2),
// else -1.
func parseCommon(name, synopsis, what string, args []string, stderr, stdout io.Writer, defaultMode string,
	extra func(fs *flag.FlagSet)) (Settings, []string, int) {
	fs := flag.NewFlagSet("dsh "+name, flag.ContinueOnError)
	sf := registerSettingFlags(fs)
	if extra != nil {
		extra(fs)
	}
	pos, err := argv.Parse(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: %s\n\n%s\n\nFlags:\n", synopsis, what)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			fmt.Fprint(stdout, "\n"+envDoc)
			return Settings{}, nil, 0
		}
		fmt.Fprintf(stderr, "dsh %s: %v\n", name, err)
		return Settings{}, nil, 2
	}
	s, err := sf.resolve(defaultMode)
	if err != nil {
		fmt.Fprintf(stderr, "dsh %s: %v\n", name, err)
		return s, nil, 2
	}
	return s, pos, -1
}

// shutdownRuntime closes every session (cancelling turns, which cancels
// their subagents), then every child process of the gateway, bounded so a
// wedged turn cannot keep the process alive.
func shutdownRuntime(rt *runtime) error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	defer rt.stopLog()
	defer func() { // the notice is told before exit; a wedged probe does not hold us
		select {
		case <-rt.noticed:
		case <-ctx.Done():
		}
	}()
	return errors.Join(rt.Close(ctx), rt.gateway.Close(ctx))
}

// extensions says where the runtime reads extension files: dsh's user
// folder, the home (for ~/.claude and ~/.agents), the config file's
// hooks (a hook it cannot use is logged, the rest run) and trusted
// projects.
func extensions(s Settings, logger *slog.Logger) core.Extensions {
	x := core.Extensions{TrustedProjects: s.TrustedProjects}
	if dir := configHome(); dir != "" {
		x.UserConfig = filepath.Join(dir, "dsh")
	}
	x.Home, _ = os.UserHomeDir()
	hooks, diags := ext.ParseHooks(s.Hooks, s.ConfigPath, ext.ScopeUser)
	for _, d := range diags {
		logger.Warn("config file: hook not used", "problem", d.Msg)
	}
	x.UserHooks = hooks
	return x
}

// userInstructions is the user-level instruction file,
// $XDG_CONFIG_HOME/dsh/AGENTS.md (~/.config/dsh/AGENTS.md), or "".
func userInstructions() string {
	dir := configHome()
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "dsh", "AGENTS.md")
}

// networkOff is the one egress setting: sandboxNetwork false closes the
// network to commands (the sandbox), web_fetch and HTTP/SSE MCP servers
// alike. With the sandbox off nothing is closed, so neither are they.
func networkOff(s Settings) bool {
	return !s.SandboxNetwork && s.Sandbox != string(sandbox.Off)
}

// secretPlaces are the places neither commands nor dsh's own reads (an
// AGENTS.md that links somewhere) may reach: the session root, the home
// folder's credentials and the user's additions. The sandbox hides dsh's
// config too, which dsh itself reads.
func secretPlaces(s Settings) []string {
	home, _ := os.UserHomeDir()
	out := append([]string{s.SessionRoot}, saferead.HomeSecrets(home)...)
	return append(out, s.SandboxHidePaths...)
}

// newSandbox builds the sandbox of the commands the model runs: hidden are
// the secret places and the session root; writable besides each session's
// own folders are the toolchain homes (toolchainHomes) and the
// sandboxWritablePaths setting's, so builds and installs keep working.
// Where the machine cannot contain fully, the user is told once.
func newSandbox(s Settings, self string, logger *slog.Logger) (*sandbox.Sandbox, <-chan struct{}) {
	home, _ := os.UserHomeDir()
	at := func(env, def string) string {
		if v := os.Getenv(env); v != "" {
			return v
		}
		if home == "" {
			return ""
		}
		return filepath.Join(home, def)
	}
	hidden := append(secretPlaces(s), filepath.Join(at("XDG_CONFIG_HOME", ".config"), "dsh"))
	if s.ConfigPath != "" {
		hidden = append(hidden, s.ConfigPath)
	}
	writable := append(toolchainHomes(home, at), s.SandboxWritablePaths...)
	sb := sandbox.New(sandbox.Config{Setting: sandbox.Setting(s.Sandbox), Network: s.SandboxNetwork, Hidden: hidden, Writable: writable, Reaper: self})
	// The probe runs while the door starts (it would add ~11 ms to every
	// start of a non-root dsh); its notice is logged when it is done.
	noticed := make(chan struct{})
	go func() {
		defer close(noticed)
		if n := sb.Notice(); n != "" {
			logger.Warn(n)
		}
	}()
	return sb, noticed
}

// mcpRestarts maps the setting (0: never) to core's (0: the default,
// negative: never).
func mcpRestarts(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
