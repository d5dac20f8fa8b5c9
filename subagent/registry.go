package subagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/core/jsonx"
)

// Protocols a provider can speak.
const (
	ProtocolInproc = "inproc"
	ProtocolSDK    = "sdk"
	ProtocolACP    = "acp"
)

// Built-in provider names.
const (
	ProviderInproc = "inproc"
	ProviderDshSDK = "dsh-sdk"
	ProviderDshACP = "dsh-acp"
)

// DefaultIdleTimeout is how long a pooled child may sit idle before it is
// closed.
const DefaultIdleTimeout = 60 * time.Second

// defaultKey is the config key naming the default provider.
const defaultKey = "default"

// provider is one configured way to run a subagent.
type provider struct {
	name     string
	protocol string
	// command is the argv; for a self provider it is filled from the
	// registry's self argv at spawn time.
	command []string
	// self: the child is this dsh binary (no "command" configured).
	self bool
	env  map[string]string
	cwd  string // "" = the parent session's cwd
	pool bool
	idle time.Duration
}

// ladder is how a child process is closed: stdin EOF and eof, SIGTERM and
// term, SIGKILL and kill (the original's 6 s / 3 s / 3 s).
type ladder struct {
	eof, term, kill time.Duration
}

var defaultLadder = ladder{eof: 6 * time.Second, term: 3 * time.Second, kill: 3 * time.Second}

// Registry holds the configured providers and the pool of their child
// processes. It is safe for concurrent use. Close it at shutdown.
type Registry struct {
	self      []string
	def       string
	providers map[string]*provider
	log       *slog.Logger

	envMu  sync.Mutex
	dshEnv map[string]string

	// cancelGrace is how long a cancelled child may take to stop on its
	// own before it is killed; killWait bounds the close ladder of a
	// cancelled child that stopped but is not going back to the pool.
	cancelGrace time.Duration
	killWait    time.Duration
	ladder      ladder
	// initTimeout bounds spawn + handshake.
	initTimeout time.Duration

	pool
}

// NewRegistry builds the providers from the config file's raw "subagents"
// object (nil or JSON null: only the built-ins). self is the argv that runs
// this dsh binary (best {os.Executable()}; a relative or bare argv[0] is
// resolved now, since children run in other directories); dsh-sdk runs
// self + "sdk" and dsh-acp self + "acp". defaultName, if not empty, names the default
// provider and wins over the config's "default".
func NewRegistry(raw json.RawMessage, self []string, defaultName string) (*Registry, error) {
	r := &Registry{
		self:        resolveSelf(self),
		providers:   map[string]*provider{},
		log:         slog.New(slog.DiscardHandler),
		cancelGrace: time.Second,
		killWait:    500 * time.Millisecond,
		ladder:      defaultLadder,
		initTimeout: 30 * time.Second,
	}
	r.pool.init()
	r.providers[ProviderInproc] = &provider{name: ProviderInproc, protocol: ProtocolInproc}
	r.providers[ProviderDshSDK] = &provider{name: ProviderDshSDK, protocol: ProtocolSDK, self: true, pool: true, idle: DefaultIdleTimeout}
	r.providers[ProviderDshACP] = &provider{name: ProviderDshACP, protocol: ProtocolACP, self: true, pool: true, idle: DefaultIdleTimeout}

	cfgDefault, err := r.load(raw)
	if err != nil {
		return nil, err
	}
	r.def = ProviderInproc
	switch {
	case defaultName != "":
		r.def = defaultName
	case cfgDefault != "":
		r.def = cfgDefault
	}
	if _, ok := r.providers[r.def]; !ok {
		return nil, fmt.Errorf("subagents: default provider %q is not configured (known: %s)", r.def, strings.Join(r.Names(), ", "))
	}
	return r, nil
}

// resolveSelf makes self[0] an absolute path: a child runs in its own cwd,
// where a relative argv[0] such as "./dsh" would name another file.
func resolveSelf(self []string) []string {
	out := append([]string(nil), self...)
	if len(out) == 0 || out[0] == "" {
		return out
	}
	if p, err := exec.LookPath(out[0]); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			out[0] = abs
		}
	}
	return out
}

// EntryKeys are the keys a provider object of the config takes.
func EntryKeys() []string { return jsonx.Keys(entry{}) }

// entry is one provider object of the config.
type entry struct {
	Protocol    string            `json:"protocol"`
	Command     []string          `json:"command"`
	Env         map[string]string `json:"env"`
	Cwd         *string           `json:"cwd"`
	Pool        *bool             `json:"pool"`
	IdleTimeout *string           `json:"idleTimeout"`
}

func (r *Registry) load(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if raw[0] != '{' {
		return "", fmt.Errorf("subagents: must be a JSON object of providers by name, got %s", preview(raw))
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", fmt.Errorf("subagents: %w", err)
	}
	var def string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		v := bytes.TrimSpace(m[name])
		if name == defaultKey {
			if len(v) == 0 || v[0] != '"' {
				return "", fmt.Errorf("subagents.default: must be a provider name (a string), got %s; %q cannot name a provider", preview(v), defaultKey)
			}
			if err := json.Unmarshal(v, &def); err != nil || def == "" {
				return "", fmt.Errorf("subagents.default: must be a non-empty provider name")
			}
			continue
		}
		p, err := parseEntry(name, v, r.providers[name])
		if err != nil {
			return "", err
		}
		r.providers[name] = p
	}
	return def, nil
}

func parseEntry(name string, raw json.RawMessage, builtin *provider) (*provider, error) {
	where := "subagents." + name
	if err := validName(name); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("%s: must be an object such as {\"protocol\": \"acp\", \"command\": [\"my-agent\", \"--acp\"]}, got %s", where, preview(raw))
	}
	var e entry
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("%s: %w (fields: protocol, command, env, cwd, pool, idleTimeout)", where, err)
	}
	var p provider
	if builtin != nil {
		p = *builtin
		if e.Protocol != "" && e.Protocol != builtin.protocol {
			return nil, fmt.Errorf("%s: the built-in provider speaks %q; to use another protocol, configure a provider with another name", where, builtin.protocol)
		}
		if e.Command != nil {
			return nil, fmt.Errorf("%s: the built-in provider runs this dsh binary and takes no command; to run another program, configure a provider with another name", where)
		}
	} else {
		switch e.Protocol {
		case ProtocolInproc, ProtocolSDK, ProtocolACP:
		case "":
			return nil, fmt.Errorf("%s: protocol is required: inproc, sdk or acp", where)
		default:
			return nil, fmt.Errorf("%s: unknown protocol %q (want inproc, sdk or acp)", where, e.Protocol)
		}
		p = provider{name: name, protocol: e.Protocol}
		if p.protocol != ProtocolInproc {
			p.pool, p.idle = true, DefaultIdleTimeout
			if e.Command == nil {
				p.self = true
			}
		}
	}
	if p.protocol == ProtocolInproc {
		switch {
		case e.Command != nil:
			return nil, fmt.Errorf("%s: an inproc provider runs in this process and takes no command", where)
		case e.Env != nil:
			return nil, fmt.Errorf("%s: an inproc provider runs in this process and takes no env", where)
		case e.Pool != nil:
			return nil, fmt.Errorf("%s: an inproc provider has no process to pool", where)
		case e.IdleTimeout != nil:
			return nil, fmt.Errorf("%s: an inproc provider has no process to keep idle", where)
		}
	}
	if e.Command != nil {
		if len(e.Command) == 0 {
			return nil, fmt.Errorf("%s: command must not be empty (omit it to run this dsh binary)", where)
		}
		for i, a := range e.Command {
			if strings.ContainsRune(a, 0) || (i == 0 && strings.TrimSpace(a) == "") {
				return nil, fmt.Errorf("%s: command[%d] %q is not a valid argument", where, i, a)
			}
		}
		p.command = append([]string(nil), e.Command...)
		p.self = false
	}
	if e.Env != nil {
		p.env = map[string]string{}
		for k, v := range e.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
				return nil, fmt.Errorf("%s: env %q is not a valid variable", where, k)
			}
			p.env[k] = v
		}
	}
	if e.Cwd != nil {
		cwd := *e.Cwd
		if !filepath.IsAbs(cwd) {
			return nil, fmt.Errorf("%s: cwd %q must be an absolute path", where, cwd)
		}
		fi, err := os.Stat(cwd)
		if err != nil {
			return nil, fmt.Errorf("%s: cwd: %w", where, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s: cwd %q is not a directory", where, cwd)
		}
		p.cwd = filepath.Clean(cwd)
	}
	if e.Pool != nil {
		p.pool = *e.Pool
	}
	if e.IdleTimeout != nil {
		d, err := time.ParseDuration(*e.IdleTimeout)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%s: idleTimeout %q is not a positive duration such as \"90s\"", where, *e.IdleTimeout)
		}
		p.idle = d
	}
	return &p, nil
}

func validName(name string) error {
	if name == "" {
		return errors.New("a provider name must not be empty")
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("provider name %q may use only letters, digits, '-', '_' and '.'", name)
		}
	}
	return nil
}

func preview(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	if len(b) == 0 {
		return "nothing"
	}
	return string(b)
}

// Names returns the provider names, sorted.
func (r *Registry) Names() []string {
	return slices.Sorted(maps.Keys(r.providers))
}

// Default returns the default provider's name.
func (r *Registry) Default() string { return r.def }

// Protocol returns the protocol of the named provider ("" if unknown).
func (r *Registry) Protocol(name string) string {
	if p, ok := r.providers[name]; ok {
		return p.protocol
	}
	return ""
}

// SetLogger sets where diagnostics go (default: discarded). Call it before
// use.
func (r *Registry) SetLogger(l *slog.Logger) {
	if l != nil {
		r.log = l
	}
}

// SetDshEnv sets values of the variables passed to children that run this
// dsh binary (see the package doc), overriding what the parent's
// environment holds: the caller passes its resolved settings (base URL,
// script, session root...) so a setting that came from a flag or the config
// file reaches the child too. An empty value removes the variable. Names
// outside the pass-through list are passed as well.
func (r *Registry) SetDshEnv(env map[string]string) {
	r.envMu.Lock()
	defer r.envMu.Unlock()
	r.dshEnv = maps.Clone(env)
}

// Close closes every child process (busy ones too: their runs end as
// failed) and waits until all are reaped. A done ctx skips the grace
// periods: children are killed, and still reaped. Idempotent; the gateway
// refuses new runs afterwards.
func (r *Registry) Close(ctx context.Context) error {
	return r.pool.closeAll(ctx)
}
