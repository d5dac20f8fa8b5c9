// Package mcp connects a session to MCP servers and offers their tools to
// the model like the built-ins: named mcp__<server>__<tool>, behind the same
// permission gate, with bounded descriptions, schemas and results. It is
// built on the official Go MCP SDK (github.com/modelcontextprotocol/go-sdk)
// and imports no door: the ACP door, the config file and an SDK host all
// hand it the same ServerConfig.
package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/dsh-dev/dsh/core/jsonx"
)

// Transport is how dsh reaches a server.
type Transport string

// Transports.
const (
	TransportStdio Transport = "stdio" // a child process on stdin/stdout
	TransportHTTP  Transport = "http"  // streamable HTTP
	TransportSSE   Transport = "sse"   // the legacy HTTP+SSE transport
)

// KV is one environment variable or HTTP header, in the order given.
type KV struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ServerConfig is one server as a door or the config file names it.
type ServerConfig struct {
	Name      string
	Transport Transport
	// stdio
	Command string
	Args    []string
	Env     []KV // added to the scrubbed environment
	// http, sse
	URL     string
	Headers []KV
	// Source says where the server came from: "config" (the config file),
	// "acp" (the client's session request), "sdk" (an SDK host).
	Source string
	// Invalid, when set, is why the entry cannot be used. The server is
	// never started and is reported as failed with this reason, so a bad
	// entry is seen rather than silently dropped.
	Invalid string
}

// ErrBadConfig wraps every problem with an mcpServers value.
var ErrBadConfig = errors.New("bad mcpServers configuration")

// Validate reports what is wrong with c, or nil.
func (c ServerConfig) Validate() error {
	if c.Invalid != "" {
		return fmt.Errorf("%w: %s", ErrBadConfig, c.Invalid)
	}
	if strings.TrimSpace(c.Name) == "" {
		return fmt.Errorf("%w: a server has no name", ErrBadConfig)
	}
	if strings.ContainsRune(c.Name, 0) || len(c.Name) > 200 {
		return fmt.Errorf("%w: server name %q is not usable (NUL byte or over 200 bytes)", ErrBadConfig, short(c.Name, 60))
	}
	switch c.Transport {
	case TransportStdio:
		if strings.TrimSpace(c.Command) == "" {
			return fmt.Errorf("%w: server %q: a stdio server needs a \"command\"", ErrBadConfig, c.Name)
		}
		for _, s := range append([]string{c.Command}, c.Args...) {
			if strings.ContainsRune(s, 0) {
				return fmt.Errorf("%w: server %q: the command or an argument contains a NUL byte", ErrBadConfig, c.Name)
			}
		}
		for _, kv := range c.Env {
			if kv.Name == "" || strings.ContainsAny(kv.Name, "=\x00") || strings.ContainsRune(kv.Value, 0) {
				return fmt.Errorf("%w: server %q: environment variable %q is not usable", ErrBadConfig, c.Name, short(kv.Name, 60))
			}
		}
	case TransportHTTP, TransportSSE:
		if strings.TrimSpace(c.URL) == "" {
			return fmt.Errorf("%w: server %q: an %s server needs a \"url\"", ErrBadConfig, c.Name, c.Transport)
		}
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: server %q: url %q is not an http(s) URL", ErrBadConfig, c.Name, short(c.URL, 200))
		}
		for _, h := range c.Headers {
			if h.Name == "" || strings.ContainsAny(h.Name, ":\r\n\x00 ") || strings.ContainsAny(h.Value, "\r\n\x00") {
				return fmt.Errorf("%w: server %q: header %q is not usable", ErrBadConfig, c.Name, short(h.Name, 60))
			}
		}
	default:
		return fmt.Errorf("%w: server %q: unknown type %q (want stdio, http or sse)", ErrBadConfig, c.Name, c.Transport)
	}
	return nil
}

// Describe is a one-line human form of the server: "stdio: npx -y x" or
// "http: https://host/mcp". Header and env values are never shown.
func (c ServerConfig) Describe() string {
	if c.Transport == TransportStdio {
		return short("stdio: "+strings.Join(append([]string{c.Command}, c.Args...), " "), 200)
	}
	return short(string(c.Transport)+": "+c.URL, 200)
}

// fileEntry is one server of the config file, in the shape Claude Code's
// .mcp.json, Claude Desktop and Cursor use.
type fileEntry struct {
	Type     string            `json:"type,omitempty"`
	Command  string            `json:"command,omitempty"`
	Args     []string          `json:"args,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	URL      string            `json:"url,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`
	Disabled bool              `json:"disabled,omitempty"`
}

// FileEntryKeys are the keys a server entry of the config file takes.
func FileEntryKeys() []string { return jsonx.Keys(fileEntry{}) }

// ParseFile reads the config file's "mcpServers" object:
//
//	{"NAME": {"command": "...", "args": [...], "env": {...}}}
//	{"NAME": {"type": "http", "url": "...", "headers": {...}}}
//
// "type" may be stdio, http (also "streamable-http", "streamableHttp") or
// sse; without it an entry with a "url" is http and one with a "command"
// stdio. ${VAR} and ${VAR:-default} in command, args, env, url and headers
// are expanded from the environment (expandVars), as in Claude Code's
// .mcp.json. Entries marked "disabled": true are left out. An entry that is
// not usable is returned with Invalid set, so it is reported rather than
// dropped; only a value that is not an object at all is an error. The
// result is sorted by name.
func ParseFile(raw json.RawMessage) ([]ServerConfig, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("%w: \"mcpServers\" must be an object of servers by name: %v", ErrBadConfig, err)
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]ServerConfig, 0, len(names))
	for _, name := range names {
		c := ServerConfig{Name: name, Source: "config"}
		var e fileEntry
		if err := json.Unmarshal(entries[name], &e); err != nil {
			c.Invalid = fmt.Sprintf("server %q: not an object with command/args/env or type/url/headers: %v", name, err)
			out = append(out, c)
			continue
		}
		if e.Disabled {
			continue
		}
		if err := expandEntry(&e); err != nil {
			c.Transport = TransportStdio
			c.Invalid = fmt.Sprintf("server %q: %v", name, err)
			out = append(out, c)
			continue
		}
		c.Command, c.Args, c.URL = e.Command, e.Args, e.URL
		c.Env, c.Headers = sortedKV(e.Env), sortedKV(e.Headers)
		switch strings.ToLower(strings.TrimSpace(e.Type)) {
		case "":
			c.Transport = TransportStdio
			if e.Command == "" && e.URL != "" {
				c.Transport = TransportHTTP
			}
		case "stdio":
			c.Transport = TransportStdio
		case "http", "streamable-http", "streamablehttp", "streamable_http":
			c.Transport = TransportHTTP
		case "sse":
			c.Transport = TransportSSE
		default:
			c.Transport = Transport(e.Type)
		}
		if err := c.Validate(); err != nil {
			c.Invalid = strings.TrimPrefix(err.Error(), ErrBadConfig.Error()+": ")
		}
		out = append(out, c)
	}
	return out, nil
}

func sortedKV(m map[string]string) []KV {
	if len(m) == 0 {
		return nil
	}
	out := make([]KV, 0, len(m))
	for k, v := range m {
		out = append(out, KV{Name: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// short cuts s to n bytes on a rune boundary, marking the cut.
func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// EncodeFile writes usable servers in the config file's shape, the inverse
// of ParseFile: how a dsh sdk child process is handed its parent session's
// servers in initialize. Entries with Invalid set are left out; nil for none.
func EncodeFile(cfgs []ServerConfig) json.RawMessage {
	out := map[string]fileEntry{}
	for _, c := range cfgs {
		if c.Invalid != "" || c.Validate() != nil {
			continue
		}
		e := fileEntry{Command: c.Command, Args: c.Args, URL: c.URL, Env: kvMap(c.Env), Headers: kvMap(c.Headers)}
		if c.Transport != TransportStdio {
			e.Type = string(c.Transport)
		}
		out[c.Name] = e
	}
	if len(out) == 0 {
		return nil
	}
	data, err := json.Marshal(out)
	if err != nil { // strings, lists and maps of strings always encode
		return nil
	}
	return data
}

func kvMap(kvs []KV) map[string]string {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Name] = kv.Value
	}
	return m
}
