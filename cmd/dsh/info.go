package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/dsh-dev/dsh/cmd/internal/argv"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/sandbox"
)

// noFlags parses the flags of a command that takes only --help (and the
// given extra flags); it returns the positionals, or an exit code ≥ 0.
func noFlags(name, synopsis, what string, args []string, stdout, stderr io.Writer, extra func(*flag.FlagSet)) ([]string, int) {
	fs := flag.NewFlagSet("dsh "+name, flag.ContinueOnError)
	if extra != nil {
		extra(fs)
	}
	pos, err := argv.Parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, "Usage: %s\n\n%s\n", synopsis, what)
		if extra != nil {
			fmt.Fprint(stdout, "\nFlags:\n")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
		}
		return nil, 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "dsh %s: %v\n", name, err)
		return nil, 2
	}
	return pos, -1
}

// versionCommand prints the release version, the module version and the VCS
// revision the Go toolchain embedded, so a bug report names the exact build.
func versionCommand(args []string, stdout, stderr io.Writer) int {
	pos, code := noFlags("version", "dsh version", "Print the version, the module version and the VCS revision of this binary.", args, stdout, stderr, nil)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "dsh version: unexpected argument %q\n", pos[0])
		return 2
	}
	fmt.Fprintln(stdout, versionLine())
	return 0
}

func versionLine() string {
	line := "dsh " + version
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return line
	}
	var rev, when, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = " (modified)"
			}
		}
	}
	if v := bi.Main.Version; v != "" {
		line += " module " + bi.Main.Path + "@" + v
	}
	if rev != "" {
		line += " revision " + rev + dirty
		if when != "" {
			line += " " + when
		}
	}
	return line + " " + bi.GoVersion
}

// configCommand prints every resolved setting with where it came from, so a
// user sees what a flag, the environment or the file actually changed.
func configCommand(args []string, stdout, stderr io.Writer) int {
	var asJSON bool
	s, pos, code := parseCommon("config", "dsh config [flags] [--json]",
		"Print the resolved settings and where each came from (flag, environment, config file, default); secrets are masked.",
		args, stderr, stdout, "auto", func(fs *flag.FlagSet) {
			fs.BoolVar(&asJSON, "json", false, "print one JSON object {key: {value, source}}")
		})
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "dsh config: unexpected argument %q\n", pos[0])
		return 2
	}
	rows := settingRows(s)
	for i, r := range rows {
		if r[0] == "sandbox" {
			rows[i][1] = sandboxInForce(s)
		}
	}
	file := configFileLine(s)
	warns := configWarnings(s)
	if asJSON {
		out := map[string]map[string]string{}
		for _, r := range rows {
			out[r[0]] = map[string]string{"value": r[1], "source": r[2]}
		}
		out["configFile"] = map[string]string{"value": s.ConfigPath, "source": file}
		if len(warns) > 0 {
			out["warnings"] = map[string]string{"value": strings.Join(warns, "\n"), "source": "config file, environment and flags"}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return 1
		}
		return 0
	}
	fmt.Fprintf(stdout, "config file: %s\n\n", file)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tVALUE\tFROM")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r[0], r[1], r[2])
	}
	if err := tw.Flush(); err != nil {
		return 1
	}
	if len(warns) > 0 {
		fmt.Fprintln(stdout, "\nwarnings:")
		for _, w := range warns {
			fmt.Fprintf(stdout, "  %s\n", w)
		}
	}
	return 0
}

// configFileLine says which config file was read and why that one, or
// where dsh looked when it read none.
func configFileLine(s Settings) string {
	switch {
	case s.ConfigPath != "" && s.Sources["configFile"] != "":
		return s.ConfigPath + " (read; named by " + s.Sources["configFile"] + ")"
	case s.ConfigPath != "":
		return s.ConfigPath + " (read; the default location)"
	}
	if dir := configHome(); dir != "" {
		return "none (no file at " + filepath.Join(dir, "dsh", "config.json") + "; name one with --config or DSH_CONFIG)"
	}
	return "none (no config home; name one with --config or DSH_CONFIG)"
}

// sandboxInForce says what actually contains the commands the model runs
// with these settings: the permission mode can turn the sandbox off (full)
// whatever the setting, and the machine decides how much it can contain.
func sandboxInForce(s Settings) string {
	switch {
	case s.PermissionMode == string(permission.ModeFull):
		return "off: permission mode full runs commands unconfined (setting " + s.Sandbox + ")"
	case s.Sandbox == string(sandbox.Off):
		return "off: commands run unconfined"
	}
	self, _ := os.Executable()
	sb, _ := newSandbox(s, self, slog.New(slog.DiscardHandler))
	return sandboxInForceWith(s, sb)
}

// sandboxInForceWith is sandboxInForce for the sandbox sb built from s.
func sandboxInForceWith(s Settings, sb *sandbox.Sandbox) string {
	switch {
	case s.PermissionMode == string(permission.ModeFull):
		return "off: permission mode full runs commands unconfined (setting " + s.Sandbox + ")"
	case s.Sandbox == string(sandbox.Off):
		return "off: commands run unconfined"
	}
	prefix := s.Sandbox + ": "
	if s.PermissionMode == string(permission.ModeReadOnly) {
		prefix += "read-only, no writes; "
	}
	switch sb.Level() {
	case sandbox.Full:
		return prefix + "contained (namespaces + Landlock); " + sandboxReach(s)
	case sandbox.LandlockOnly:
		return prefix + "partly contained (Landlock only): " + sb.Notice()
	}
	if s.Sandbox == string(sandbox.Required) {
		return prefix + "commands refused: " + sb.Notice()
	}
	return prefix + "not contained on this machine: " + sb.Notice()
}

// settingRows lists {key, value, source} sorted by key, the API key masked.
func settingRows(s Settings) [][3]string {
	values := map[string]string{
		"provider": s.Provider, "model": s.Model, "baseUrl": s.BaseURL,
		"reasoningEffort": s.ReasoningEffort, "maxTokens": itoa(s.MaxTokens),
		"sessionRoot": s.SessionRoot, "permissionMode": s.PermissionMode, "script": s.Script,
		"stepCap": itoa(s.StepCap), "logLevel": strings.ToLower(s.LogLevel.String()),
		"contextWindow": strconv.FormatInt(s.ContextWindow, 10), "compactAt": strconv.FormatFloat(s.CompactAt, 'g', -1, 64),
		"webFetchAllowPrivate":   strconv.FormatBool(s.WebFetchAllowPrivate),
		"webSearch":              s.WebSearch,
		"sandbox":                s.Sandbox,
		"sandboxNetwork":         strconv.FormatBool(s.SandboxNetwork),
		"sandboxHidePaths":       "none",
		"mcpServers":             fmt.Sprintf("%d configured", len(s.MCPServers)),
		"mcpRestarts":            strconv.Itoa(s.MCPRestarts),
		"checkpoints":            strconv.FormatBool(s.Checkpoints),
		"checkpointMaxFileBytes": strconv.Itoa(s.CheckpointMaxFileBytes),
		"subagents":              "not configured",
		"prices":                 "not configured",
		"hooks":                  "none",
		"trustedProjects":        "none",
	}
	if len(s.Hooks) > 0 && string(s.Hooks) != "null" {
		values["hooks"] = hooksSummary(s)
		s.Sources["hooks"] = "config file"
	}
	if len(s.TrustedProjects) > 0 {
		values["trustedProjects"] = strings.Join(s.TrustedProjects, ", ")
		s.Sources["trustedProjects"] = "config file"
	}
	s.Agent.rows(values)
	if len(s.SandboxHidePaths) > 0 {
		values["sandboxHidePaths"] = strings.Join(s.SandboxHidePaths, ", ")
	}
	dailyRows(s, values)
	if s.ContextWindow == 0 {
		values["contextWindow"] = "the model's"
	}
	if s.CompactAt == 0 {
		values["compactAt"] = "core default (0.8)"
	}
	if len(s.Subagents) > 0 {
		values["subagents"] = "configured"
		s.Sources["subagents"] = "config file"
	}
	if len(s.MCPServers) > 0 {
		s.Sources["mcpServers"] = "config file"
	}
	if len(s.Prices) > 0 && string(s.Prices) != "null" {
		values["prices"] = "configured"
		s.Sources["prices"] = "config file"
	}
	if s.APIKey != "" {
		values["apiKey"] = "set (masked)"
	} else {
		values["apiKey"] = "not set"
		s.Sources["apiKey"] = "environment (" + keyVar(s.Provider) + ")"
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rows := make([][3]string, 0, len(keys))
	for _, k := range keys {
		src := s.Sources[k]
		if src == "" {
			src = "default"
		}
		rows = append(rows, [3]string{k, values[k], src})
	}
	return rows
}

func keyVar(provider string) string {
	if provider == "openai-compatible" {
		return "OPENAI_API_KEY"
	}
	return "DEEPSEEK_API_KEY"
}
