package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/jsonx"
	"github.com/dsh-dev/dsh/core/mcp"
	"github.com/dsh-dev/dsh/subagent"
)

// fileConfig is the config file's shape. Every key a user may write is a
// field here: decoding refuses anything else, so a typo cannot silently do
// nothing.
type fileConfig struct {
	Provider        string          `json:"provider"`
	Model           string          `json:"model"`
	BaseURL         string          `json:"baseUrl"`
	ReasoningEffort string          `json:"reasoningEffort"`
	MaxTokens       *int            `json:"maxTokens"`
	SessionRoot     string          `json:"sessionRoot"`
	PermissionMode  string          `json:"permissionMode"`
	Script          string          `json:"script"`
	StepCap         *int            `json:"stepCap"`
	ContextWindow   *float64        `json:"contextWindow"`
	CompactAt       *float64        `json:"compactAt"`
	LogLevel        string          `json:"logLevel"`
	Subagents       json.RawMessage `json:"subagents"`
	// WebFetchAllowPrivate lets web_fetch reach loopback and private
	// network addresses.
	WebFetchAllowPrivate *bool `json:"webFetchAllowPrivate"`
	// WebSearch is "off", "on", "all", true or false (Settings.WebSearch).
	WebSearch  json.RawMessage `json:"webSearch"`
	MCPServers json.RawMessage `json:"mcpServers"`
	// MCPRestarts is how often a server that dies is restarted within
	// 5 minutes (0: never).
	MCPRestarts *int `json:"mcpRestarts"`
	// LoopWarnAt and LoopStopAt are the repeat check's thresholds: the
	// same call and result this many steps back to back warns, then stops.
	LoopWarnAt *int `json:"loopWarnAt"`
	LoopStopAt *int `json:"loopStopAt"`
	// BashYieldSeconds: a foreground bash call without its own timeout
	// goes on as a background job after this many seconds (0: never).
	BashYieldSeconds *int `json:"bashYieldSeconds"`
	// RetryBudgetSeconds bounds the retries of an overloaded service.
	RetryBudgetSeconds *int `json:"retryBudgetSeconds"`
	// Prices, per model and million tokens, give ACP usage updates a cost.
	Prices json.RawMessage `json:"prices"`
	// Sandbox is auto | required | off; SandboxNetwork false turns the
	// network off for the commands the model runs.
	Sandbox        string `json:"sandbox"`
	SandboxNetwork *bool  `json:"sandboxNetwork"`
	// SandboxHidePaths are more secret places for the sandbox to hide.
	SandboxHidePaths []string `json:"sandboxHidePaths"`
	// Hooks are the user's hooks, in Claude Code's settings shape; they
	// run in every project.
	Hooks json.RawMessage `json:"hooks"`
	// TrustedProjects are folders whose project hooks (.dsh/settings.json,
	// .claude/settings.json) and command !-lines may run (`dsh trust`).
	TrustedProjects []string `json:"trustedProjects"`
	// SandboxWritablePaths are more folders sandboxed commands may write.
	SandboxWritablePaths []string `json:"sandboxWritablePaths"`
	// CommandEnv names the variables (or NAME* prefixes) the commands the
	// model runs inherit besides the base set.
	CommandEnv []string `json:"commandEnv"`
	// AllowedTools and DisallowedTools are standing allow and deny lists:
	// tool names or TOOL(PATTERN) rules.
	AllowedTools    []string `json:"allowedTools"`
	DisallowedTools []string `json:"disallowedTools"`
	// Checkpoints false turns off the workspace snapshots that rewind
	// restores; CheckpointMaxFileBytes leaves larger files out of them.
	Checkpoints            *bool `json:"checkpoints"`
	CheckpointMaxFileBytes *int  `json:"checkpointMaxFileBytes"`
}

// configKeys are the keys of fileConfig, from its tags.
func configKeys() []string {
	t := reflect.TypeOf(fileConfig{})
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// secretKeys are keys people write for credentials, which dsh reads only
// from the environment.
var secretKeys = map[string]string{
	"apikey": "API keys are read only from the environment (DEEPSEEK_API_KEY or OPENAI_API_KEY), never from the config file",
}

// parseConfig decodes a config file strictly. Errors name the file, the key
// and what was wrong in words, never Go's type names.
func parseConfig(path string, data []byte) (fileConfig, error) {
	var fc fileConfig
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fc, fmt.Errorf("config file %s: %s", path, syntaxWords(data, err))
	}
	if raw == nil {
		return fc, fmt.Errorf("config file %s: want a JSON object such as {\"model\": \"deepseek-flash\"}", path)
	}
	known := configKeys()
	var names []string
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if msg := unknownKey(k, known); msg != "" {
			return fc, fmt.Errorf("config file %s: %s", path, msg)
		}
	}
	for _, k := range names {
		if msg := unknownEntryKey(k, raw[k]); msg != "" {
			return fc, fmt.Errorf("config file %s: %s", path, msg)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fc); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fc, fmt.Errorf("config file %s: %q must be %s, not %s", path, te.Field, kindWords(te.Type), valueWords(te.Value))
		}
		return fc, fmt.Errorf("config file %s: %w", path, err)
	}
	return fc, nil
}

// entryKeys are the keys of each entry of the config's objects of named
// entries, read from the structs their parsers decode into, so a key a
// parser learns is known here too: an MCP server (core/mcp's file entry),
// a model's prices (core.Price), a subagent provider (subagent's entry).
// "subagents" also holds "default", a provider name.
var entryKeys = map[string][]string{
	"mcpServers": mcp.FileEntryKeys(),
	"prices":     jsonx.Keys(core.Price{}),
	"subagents":  subagent.EntryKeys(),
}

// unknownEntryKey explains a key inside an entry of mcpServers, prices or
// subagents that the entry does not take, with the same did-you-mean as
// the top level ("mcpServers.github: unknown key "agrs" (did you mean
// "args"?)"), or returns "". Values that are not objects are left to the
// parsers of those settings, which say what they want.
func unknownEntryKey(setting string, raw json.RawMessage) string {
	known, ok := entryKeys[setting]
	if !ok {
		return ""
	}
	var entries map[string]json.RawMessage
	if json.Unmarshal(raw, &entries) != nil {
		return ""
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var fields map[string]json.RawMessage
		if json.Unmarshal(entries[n], &fields) != nil {
			continue
		}
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if msg := unknownKey(k, known); msg != "" {
				return fmt.Sprintf("%s.%s: %s", setting, n, msg)
			}
		}
	}
	return ""
}

// unknownKey explains a key that is not a setting, or returns "".
func unknownKey(k string, known []string) string {
	for _, kn := range known {
		if k == kn {
			return ""
		}
	}
	norm := normKey(k)
	if msg, ok := secretKeys[norm]; ok {
		return fmt.Sprintf("%q: %s", k, msg)
	}
	best, bestD := "", 1<<30
	for _, kn := range known {
		if normKey(kn) == norm {
			return fmt.Sprintf("unknown key %q (did you mean %q? keys are camelCase)", k, kn)
		}
		if d := editDistance(norm, normKey(kn)); d < bestD {
			best, bestD = kn, d
		}
	}
	if bestD <= 3 {
		return fmt.Sprintf("unknown key %q (did you mean %q?)", k, best)
	}
	return fmt.Sprintf("unknown key %q (known keys: %s)", k, strings.Join(known, ", "))
}

// normKey folds case and separators, so base_url and BaseURL meet baseUrl.
func normKey(k string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(k))
}

// editDistance is the Levenshtein distance of two short keys.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func kindWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64:
		return "a whole number"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a " + t.Kind().String()
}

func valueWords(v string) string {
	switch v {
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "bool":
		return "true or false"
	case "array":
		return "a list"
	case "object":
		return "an object"
	}
	if strings.HasPrefix(v, "number ") {
		return "the number " + strings.TrimPrefix(v, "number ")
	}
	return v
}

// syntaxWords places a JSON syntax error at its line and column.
func syntaxWords(data []byte, err error) string {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return "want a JSON object of settings, not " + valueWords(te.Value)
		}
		return err.Error()
	}
	line, col := 1, 1
	for _, c := range data[:min(int(se.Offset), len(data))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("not valid JSON at line %d, column %d: %v", line, col, se)
}
