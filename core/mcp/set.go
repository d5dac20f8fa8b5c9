package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/core/tool"
)

// Defaults of Options.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultCallTimeout  = 10 * time.Minute
)

// Options configure a Set.
type Options struct {
	// Cwd is the session's workspace: stdio servers run there and every
	// server is told it as its root.
	Cwd string
	// Version is dsh's version, sent in initialize.
	Version string
	// StartTimeout bounds one server's start: process, initialize and the
	// first tools/list (default 30 s).
	StartTimeout time.Duration
	// CallTimeout bounds one tool call (default 10 min).
	CallTimeout time.Duration
	Logger      *slog.Logger
	// Reserved reports names that MCP tools must not take (the built-ins).
	Reserved func(name string) bool
	// OnStatus is told every change of a server: ready (with its tool
	// count), restarting or failed (with why), a new tool list. It must
	// not block.
	OnStatus func(Status)
	// Restart bounds the restarts of a server that dies (defaults:
	// RestartPolicy).
	Restart RestartPolicy
	// NetworkOff refuses HTTP and SSE servers (sandboxNetwork false: the
	// network is off for commands and dsh's own requests alike); stdio
	// servers, which the user runs on this machine, still start.
	NetworkOff bool

	// dial, when set, connects every server in place of its transport:
	// tests run servers in memory, inside a testing/synctest bubble.
	dial func(ServerConfig) (sdk.Transport, error)
}

// Set is the MCP servers of one session (shared with its in-process
// subagent children). Servers start in parallel when the set is made;
// their tools join as each becomes ready.
type Set struct {
	opts   Options
	ctx    context.Context
	cancel context.CancelFunc
	starts sync.WaitGroup

	mu       sync.Mutex
	servers  []*server // sorted by name; Add adds to it
	version  uint64
	names    *namer
	snap     []tool.Tool
	snapAt   uint64
	snapped  bool
	closed   bool
	closeErr error
}

// Start makes a set and starts its servers, each in its own goroutine. A
// later entry with the name of an earlier one is refused (reported as a
// failed server); the first one stays.
func Start(cfgs []ServerConfig, opts Options) *Set {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Restart = opts.Restart.withDefaults()
	s := &Set{opts: opts, names: newNamer(opts.Reserved)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	seen := map[string]ServerConfig{}
	for _, c := range cfgs {
		if prev, dup := seen[c.Name]; dup && c.Name != "" {
			c.Invalid = fmt.Sprintf("server %q: another server of that name is configured (%s, from %s); this %s entry was ignored",
				c.Name, prev.Describe(), sourceName(prev.Source), sourceName(c.Source))
		} else {
			seen[c.Name] = c
		}
		s.servers = append(s.servers, newServer(s, c))
	}
	sort.SliceStable(s.servers, func(i, j int) bool { return s.servers[i].cfg.Name < s.servers[j].cfg.Name })
	for _, sv := range s.servers {
		s.startServer(sv)
	}
	return s
}

func (s *Set) startServer(sv *server) {
	s.starts.Add(1)
	go func() {
		defer s.starts.Done()
		sv.start(s.ctx)
	}()
}

// Add starts the servers of cfgs whose names the set does not have yet (a
// client that sends its servers again when it reopens a live session): a
// server of a name already there is kept as it is, running or not. It
// returns the names it started, sorted; none once the set is closed.
func (s *Set) Add(cfgs []ServerConfig) []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	have := map[string]bool{}
	for _, sv := range s.servers {
		have[sv.cfg.Name] = true
	}
	// A new slice: list's callers range over the old one unlocked.
	next := slices.Clone(s.servers)
	var added []string
	for _, c := range cfgs {
		if have[c.Name] {
			continue
		}
		have[c.Name] = true
		sv := newServer(s, c)
		next = append(next, sv)
		added = append(added, c.Name)
		s.startServer(sv)
	}
	sort.SliceStable(next, func(i, j int) bool { return next[i].cfg.Name < next[j].cfg.Name })
	s.servers = next
	sort.Strings(added)
	if len(added) > 0 {
		s.version++
	}
	return added
}

// list is the set's servers now, sorted by name.
func (s *Set) list() []*server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.servers
}

func sourceName(src string) string {
	switch src {
	case "config":
		return "the config file"
	case "acp":
		return "the ACP client"
	case "sdk":
		return "the SDK host"
	case "":
		return "the caller"
	}
	return src
}

// Merge returns base with over's servers added; a server of over replaces
// the one of base with the same name (the client's list is the user's
// current intent; the config file is the standing one).
func Merge(base, over []ServerConfig) []ServerConfig {
	if len(over) == 0 {
		return base
	}
	names := map[string]bool{}
	for _, c := range over {
		names[c.Name] = true
	}
	out := make([]ServerConfig, 0, len(base)+len(over))
	for _, c := range base {
		if !names[c.Name] {
			out = append(out, c)
		}
	}
	return append(out, over...)
}

// Len is the number of servers (failed ones included).
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.list())
}

// WaitStarted blocks until every server is ready or failed, or ctx ends.
// It reports whether all settled.
func (s *Set) WaitStarted(ctx context.Context) bool {
	if s == nil {
		return true
	}
	for _, sv := range s.list() {
		select {
		case <-sv.settled:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// Starting reports whether a server is still starting.
func (s *Set) Starting() bool {
	if s == nil {
		return false
	}
	for _, sv := range s.list() {
		select {
		case <-sv.settled:
		default:
			return true
		}
	}
	return false
}

// Version changes whenever the tools on offer may have changed.
func (s *Set) Version() uint64 {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// Tools returns the tools of the ready servers, sorted by model-facing
// name, and the version they belong to. A (server, tool) pair keeps its
// name for the life of the set.
func (s *Set) Tools() ([]tool.Tool, uint64) {
	if s == nil {
		return nil, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snapped && s.snapAt == s.version {
		return s.snap, s.version
	}
	var out []tool.Tool
	for _, sv := range s.servers { // sorted by server name
		sv.mu.Lock()
		ready, tools := sv.state == StateReady || sv.state == StateRestarting, sv.tools
		sv.mu.Unlock()
		if !ready {
			continue
		}
		for _, rt := range tools { // sorted by tool name
			out = append(out, &Tool{server: sv, name: s.names.name(sv.cfg.Name, rt.name), remote: rt})
		}
	}
	out = tool.Sort(out)
	s.snap, s.snapAt, s.snapped = out, s.version, true
	return out, s.version
}

// Configs returns the configurations of the set's usable servers (those
// not refused as invalid or duplicate), sorted by name: what a subagent
// child process is given so it reaches the same servers.
func (s *Set) Configs() []ServerConfig {
	if s == nil {
		return nil
	}
	var out []ServerConfig
	for _, sv := range s.list() {
		if sv.cfg.Validate() == nil {
			out = append(out, sv.cfg)
		}
	}
	return out
}

// Status returns every server's status, sorted by name.
func (s *Set) Status() []Status {
	if s == nil {
		return nil
	}
	servers := s.list()
	out := make([]Status, 0, len(servers))
	for _, sv := range servers {
		out = append(out, sv.status())
	}
	return out
}

// changed is called by a server whose state or tools changed.
func (s *Set) changed(sv *server) {
	s.mu.Lock()
	s.version++
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return
	}
	st := sv.status()
	switch st.State {
	case StateReady:
		s.opts.Logger.Info("mcp: server ready", "server", st.Name, "tools", st.Tools, "transport", st.Transport)
		if st.Note != "" {
			s.opts.Logger.Warn("mcp: server tools cut", "server", st.Name, "note", st.Note)
		}
	case StateRestarting:
		s.opts.Logger.Warn("mcp: server died; restarting it", "server", st.Name, "restarts", st.Restarts, "error", st.Error)
	case StateFailed:
		s.opts.Logger.Warn("mcp: server failed", "server", st.Name, "error", st.Error)
	}
	if s.opts.OnStatus != nil {
		s.opts.OnStatus(st)
	}
}

func (s *Set) warn(server, msg string) {
	s.opts.Logger.Warn("mcp: "+msg, "server", server)
}

// Close stops every server, in parallel, and waits for their processes.
// Idempotent.
func (s *Set) Close(ctx context.Context) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return s.closeErr
	}
	s.closed = true
	servers := s.servers
	s.mu.Unlock()
	s.cancel()
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, sv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = sv.stop(ctx)
		}()
	}
	wg.Wait()
	s.starts.Wait()
	err := errors.Join(errs...)
	s.mu.Lock()
	s.closeErr = err
	s.mu.Unlock()
	return err
}
