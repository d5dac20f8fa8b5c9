// Package core is the protocol-neutral agent runtime: sessions, their logs,
// the prompt queue, the turn loop and the subscription fan-out every door
// projects from. It imports no door and no door library (ARCHITECTURE.md §2).
package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/mcp"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/saferead"
	"github.com/dsh-dev/dsh/core/store"
	"github.com/dsh-dev/dsh/core/tool"
)

// Errors of the runtime. Doors map them to wire codes at their edge.
var (
	ErrClosed   = errors.New("runtime is closed")
	ErrLive     = errors.New("session is already live in this process")
	ErrNotFound = store.ErrNotFound
	ErrDepth    = errors.New("delegation depth limit reached")
	ErrBadInput = errors.New("invalid input")
	// ErrQueueFull refuses a prompt when MaxQueuedPrompts already wait.
	ErrQueueFull = errors.New("the session's prompt queue is full")
)

// Config configures a Runtime.
type Config struct {
	Store *store.Store
	// NewProvider builds a provider by name. The runtime keeps one per name.
	NewProvider func(name string) (model.Provider, error)
	// Defaults is the model configuration of new sessions.
	Defaults event.Config
	// PermissionMode is the default mode of new sessions.
	PermissionMode permission.Mode
	// Tools are the model-facing tools; the runtime sorts them by name.
	Tools []tool.Tool
	// StepCap bounds the steps of one turn (default 200).
	StepCap int
	// LoopWarnAt and LoopStopAt are the repeat check's thresholds: the
	// same call returning the same result this many steps back to back
	// warns the model, then ends the turn blocked (defaults 4 and 6;
	// LoopWarnAt must be below LoopStopAt).
	LoopWarnAt, LoopStopAt int
	// BashYield is how long a foreground bash call without a timeout of
	// its own runs before it goes on as a background job (the
	// bashYieldSeconds setting; default DefaultBashYield, negative never).
	BashYield time.Duration
	// MaxDepth caps the delegation depth of subagent sessions (default 3).
	MaxDepth int
	// BaseDepth is the delegation depth of sessions created without a
	// parent in this process: a dsh started by another dsh's subagent
	// gateway runs at its parent's depth + 1 (DSH_DELEGATION_DEPTH).
	BaseDepth int
	// DelegatedBy is the session, in the dsh process whose gateway started
	// this one, that delegated to it (DSH_PARENT_SESSION): recorded as the
	// parentSession of sessions created without a parent here.
	DelegatedBy string
	// Persona overrides the first paragraph of the system prompt. It may use
	// {{model}} and {{cwd}}.
	Persona string
	// UserInstructions is the user-level instruction file included in every
	// context message before the project's own AGENTS.md files
	// ($XDG_CONFIG_HOME/dsh/AGENTS.md; cmd sets it). "" reads none.
	UserInstructions string
	// SecretPaths are places dsh never reads on its own, also through a
	// link (instruction files): cmd passes the sandbox's hidden places but
	// dsh's config folder. nil: saferead.HomeSecrets of $HOME.
	SecretPaths []string
	// Now is the clock of context messages (default time.Now).
	Now func() time.Time
	// Origin is recorded in the header of sessions this runtime creates.
	Origin string
	Logger *slog.Logger
	// Backoff is the wait before retry number n, from 1 (default
	// model.Backoff).
	Backoff func(attempt int, retryAfter time.Duration) time.Duration
	// After is the clock retries wait on (default time.After; tests
	// inject one that does not sleep).
	After func(d time.Duration) <-chan time.Time
	// RetryBudget is the total backoff a step spends on an overloaded
	// service (429, 503, insufficient resources) before the turn ends
	// saying so (the retryBudgetSeconds setting; default
	// DefaultRetryBudget).
	RetryBudget time.Duration
	// Files and Exec are the defaults for sessions that bring none.
	Files tool.FileSystem
	Exec  tool.Executor
	// ContextWindow overrides the model's context window in tokens (the
	// contextWindow setting); 0 uses what the provider says of the model.
	ContextWindow int64
	// CompactAt is the share of the window at which a session compacts
	// before its next model call (the compactAt setting; default 0.8).
	CompactAt float64
	// MCPServers are started for every session (the config file's).
	MCPServers []mcp.ServerConfig
	// MCPStartWait bounds how long opening a session waits for its MCP
	// servers (default 1.5 s); MCPStartTimeout bounds one server's start
	// (default 30 s).
	MCPStartWait time.Duration
	// MCPRestarts bounds the restarts of a server that dies within its
	// session, per 5 minutes (0: mcp's default, 3; negative: never).
	MCPRestarts     int
	MCPStartTimeout time.Duration
	// ToolLists are the user's allow and deny lists of tools, applied by
	// every session's permission gate in every mode.
	ToolLists permission.Lists
	// NetworkOff: the user turned the network off (sandboxNetwork false):
	// HTTP and SSE MCP servers are refused like the commands' connections.
	NetworkOff bool
	// Version is dsh's version, told to MCP servers.
	Version string
	// Prices, by model id, give each committed model call its cost (the
	// config file's "prices" key; ParsePrices).
	Prices map[string]Price
	// Extensions say where extension files are read and which
	// projects' hooks run (see Extensions).
	Extensions Extensions
	// Checkpoints bounds (or turns off) the workspace snapshots taken at
	// each turn's start and end, which rewind restores.
	Checkpoints CheckpointConfig
}

// DefaultBashYield is how long a foreground bash call without its own
// timeout runs before it goes on as a background job.
const DefaultBashYield = 30 * time.Second

// Runtime owns the live sessions of one process.
type Runtime struct {
	cfg Config
	log *slog.Logger
	// tools are the runtime's own tools (the built-ins and registered
	// ones), sorted; base is their toolset, built on first use: building
	// it reads every description, and bash's waits for the sandbox's probe
	// (see baseTools). gen counts changes of tools.
	tools []tool.Tool
	base  *toolset
	gen   int

	mu        sync.Mutex
	sessions  map[string]*Session
	creating  map[string]*creation
	providers map[string]model.Provider
	rules     map[string]*permission.Rules
	closed    bool
	// warned are the warnings already logged (warnOnce).
	warned map[string]bool

	subMu sync.Mutex
	subs  []*Subscription

	onClose []func(sessionID string)

	// commands are the slash commands every door offers (commands.go).
	commands *Commands
}

type creation struct {
	done chan struct{}
	s    *Session
	err  error
}

// New builds a runtime.
func New(cfg Config) (*Runtime, error) {
	if cfg.Store == nil {
		return nil, errors.New("core: Config.Store is required")
	}
	if cfg.NewProvider == nil {
		cfg.NewProvider = func(name string) (model.Provider, error) { return model.New(name, model.Options{}) }
	}
	if cfg.StepCap <= 0 {
		cfg.StepCap = 200
	}
	switch {
	case cfg.BashYield == 0:
		cfg.BashYield = DefaultBashYield
	case cfg.BashYield < 0:
		cfg.BashYield = 0
	}
	if cfg.LoopWarnAt <= 0 {
		cfg.LoopWarnAt = DefaultLoopWarnAt
	}
	if cfg.LoopStopAt <= 0 {
		cfg.LoopStopAt = max(DefaultLoopStopAt, cfg.LoopWarnAt+1)
	}
	if cfg.LoopWarnAt >= cfg.LoopStopAt {
		return nil, fmt.Errorf("core: loopWarnAt %d must be below loopStopAt %d", cfg.LoopWarnAt, cfg.LoopStopAt)
	}
	if cfg.MaxDepth <= 0 {
		cfg.MaxDepth = 3
	}
	if cfg.PermissionMode == "" {
		cfg.PermissionMode = permission.ModeAuto
	}
	if cfg.SecretPaths == nil {
		home, _ := os.UserHomeDir()
		cfg.SecretPaths = saferead.HomeSecrets(home)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Backoff == nil {
		cfg.Backoff = model.Backoff
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	if cfg.RetryBudget <= 0 {
		cfg.RetryBudget = DefaultRetryBudget
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ContextWindow < 0 {
		return nil, fmt.Errorf("core: context window %d is not a positive number of tokens", cfg.ContextWindow)
	}
	if cfg.CompactAt == 0 {
		cfg.CompactAt = DefaultCompactAt
	}
	if cfg.CompactAt <= 0 || cfg.CompactAt > 1 {
		return nil, fmt.Errorf("core: compactAt %v is not a share of the window in (0, 1]", cfg.CompactAt)
	}
	if cfg.Files == nil {
		cfg.Files = tool.LocalFS()
	}
	if cfg.Exec == nil {
		cfg.Exec = tool.LocalExec()
	}
	r := &Runtime{
		cfg:       cfg,
		log:       cfg.Logger,
		sessions:  map[string]*Session{},
		creating:  map[string]*creation{},
		providers: map[string]model.Provider{},
		rules:     map[string]*permission.Rules{},
		commands:  builtinCommands(),
	}
	// Command files of the project and the user (.dsh/commands,
	// .claude/commands, ...) come after the built-ins, which win.
	r.commands.AddSource(fileCommands)
	// MCP servers' prompts, as /mcp__<server>__<prompt>.
	r.commands.AddSource(mcpPromptCommands)
	r.setTools(cfg.Tools)
	return r, nil
}

// RegisterTool adds a tool (the subagent gateway registers itself after the
// runtime exists). Call it before the first session is created: the tool
// list is part of every session's byte-stable request prefix.
func (r *Runtime) RegisterTool(t tool.Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setTools(append(append([]tool.Tool(nil), r.tools...), t))
}

// setTools replaces the runtime's tools; called with mu held (or before
// the runtime is shared).
func (r *Runtime) setTools(ts []tool.Tool) { r.tools, r.base, r.gen = tool.Sort(ts), nil, r.gen+1 }

// Tools returns the runtime's own tools, sorted by name (a session's list
// adds its MCP servers' tools: Session.Tools).
func (r *Runtime) Tools() []tool.Tool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]tool.Tool(nil), r.tools...)
}

// Store returns the runtime's session store.
func (r *Runtime) Store() *store.Store { return r.cfg.Store }

// Defaults returns the default model configuration.
func (r *Runtime) Defaults() event.Config { return r.cfg.Defaults }

// MaxDepth returns the delegation depth cap.
func (r *Runtime) MaxDepth() int { return r.cfg.MaxDepth }

// Provider returns the provider of that name, building it once.
func (r *Runtime) Provider(name string) (model.Provider, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.providers[name]; ok {
		return p, nil
	}
	p, err := r.cfg.NewProvider(name)
	if err != nil {
		return nil, err
	}
	r.providers[name] = p
	return p, nil
}

// SessionOptions configure one session.
type SessionOptions struct {
	// ID of the session; "" mints session-<uuid>.
	ID  string
	Cwd string
	// Config overrides the runtime defaults field by field (zero = default).
	Config         event.Config
	PermissionMode permission.Mode
	Asker          permission.Asker
	Files          tool.FileSystem
	Exec           tool.Executor
	ParentSession  string
	Depth          int
	Origin         string
	// OnDelta receives live model deltas (never persisted).
	OnDelta func(model.Delta)
	// MCPServers are the door's MCP servers for this session (ACP
	// mcpServers), added to the runtime's; one of the same name wins.
	MCPServers []mcp.ServerConfig
	// AdditionalDirs are more workspace roots (absolute; ACP
	// additionalDirectories): the permission gate treats paths under them
	// as inside the workspace, and the sandbox lets commands write them.
	// They are recorded for a new session; a resumed one keeps the set
	// its log records (Session.SetAdditionalDirs replaces it).
	AdditionalDirs []string
	// AgentType is the agent file (.dsh/agents, .claude/agents) a
	// subagent child runs as: its tools are limited to the type's and its
	// system prompt gains the type's instructions.
	AgentType string
}

// NewSessionID mints a fresh session id.
func NewSessionID() string { return "session-" + strings.ReplaceAll(uuid.NewString(), "-", "") }

// Get returns the live session with that id, or nil.
func (r *Runtime) Get(id string) *Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[id]
}

// Sessions returns the live sessions.
func (r *Runtime) Sessions() []*Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		out = append(out, s)
	}
	return out
}

// Create starts a new session; it fails if the id is live or stored.
func (r *Runtime) Create(ctx context.Context, opts SessionOptions) (*Session, error) {
	if opts.ID == "" {
		opts.ID = NewSessionID()
	}
	return r.coalesce(ctx, opts.ID, func() (*Session, error) { return r.create(opts) })
}

// Resume opens a stored session for writing. A session live in this
// process is refused with ErrLive.
func (r *Runtime) Resume(ctx context.Context, id string, opts SessionOptions) (*Session, error) {
	opts.ID = id
	return r.coalesce(ctx, id, func() (*Session, error) { return r.resume(opts) })
}

// GetOrCreate returns the live session with that id, else resumes it from
// the store, else creates it. Concurrent calls for one id share one
// creation; a failed creation is forgotten so the next call tries again.
func (r *Runtime) GetOrCreate(ctx context.Context, id string, opts SessionOptions) (*Session, error) {
	opts.ID = id
	if s := r.Get(id); s != nil {
		return s, nil
	}
	return r.coalesce(ctx, id, func() (*Session, error) {
		if s := r.Get(id); s != nil {
			return s, nil
		}
		s, err := r.resume(opts)
		if errors.Is(err, store.ErrNotFound) {
			return r.create(opts)
		}
		return s, err
	})
}

func (r *Runtime) coalesce(ctx context.Context, id string, fn func() (*Session, error)) (*Session, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	if c, ok := r.creating[id]; ok {
		r.mu.Unlock()
		select {
		case <-c.done:
			return c.s, c.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	c := &creation{done: make(chan struct{})}
	r.creating[id] = c
	r.mu.Unlock()

	c.s, c.err = fn()

	r.mu.Lock()
	delete(r.creating, id)
	if c.err == nil {
		if r.closed {
			r.mu.Unlock()
			_ = c.s.Close(context.Background())
			c.s, c.err = nil, ErrClosed
			close(c.done)
			return nil, ErrClosed
		}
		r.sessions[id] = c.s
	}
	r.mu.Unlock()
	close(c.done)
	if c.err == nil {
		r.publish(c.s, Notice{Kind: NoticeCreated, SessionID: id, Header: c.s.header, Resumed: c.s.resumed})
		c.s.mcpAnnounced()
	}
	return c.s, c.err
}

func (r *Runtime) create(opts SessionOptions) (*Session, error) {
	if r.Get(opts.ID) != nil {
		return nil, fmt.Errorf("session %q: %w", opts.ID, ErrLive)
	}
	if opts.ParentSession == "" && opts.Depth < r.cfg.BaseDepth {
		opts.Depth = r.cfg.BaseDepth
	}
	if opts.Depth > r.cfg.MaxDepth {
		return nil, fmt.Errorf("%w: depth %d exceeds the cap of %d", ErrDepth, opts.Depth, r.cfg.MaxDepth)
	}
	cwd, err := absCwd(opts.Cwd)
	if err != nil {
		return nil, err
	}
	cfg := r.mergeConfig(opts.Config)
	origin := opts.Origin
	if origin == "" {
		origin = r.cfg.Origin
	}
	parent := opts.ParentSession
	if parent == "" {
		parent = r.cfg.DelegatedBy
	}
	h := store.Header{ID: opts.ID, Cwd: cwd, ParentSession: parent, Origin: origin,
		DelegationDepth: opts.Depth, Config: &cfg}
	st := r.readExtensions(cwd)
	if opts.AgentType != "" {
		if st.agent, err = st.agentNamed(opts.AgentType); err != nil {
			return nil, err
		}
		h.Agent = agentRecord(st.agent)
	}
	lg, err := r.cfg.Store.Create(h)
	if err != nil {
		return nil, err
	}
	s, err := r.newSession(lg, nil, opts, cfg, false, st)
	if err != nil {
		_ = lg.Close()
		return nil, err
	}
	return s, nil
}

func (r *Runtime) resume(opts SessionOptions) (*Session, error) {
	if r.Get(opts.ID) != nil {
		return nil, fmt.Errorf("session %q: %w", opts.ID, ErrLive)
	}
	lg, events, err := r.cfg.Store.Open(opts.ID)
	if err != nil {
		return nil, err
	}
	h := lg.Header()
	cfg := r.mergeConfig(event.Config{})
	if h.Config != nil {
		cfg = r.mergeConfig(*h.Config)
	}
	st := r.readExtensions(h.Cwd)
	st.agent = r.recordedAgent(&st, h)
	s, err := r.newSession(lg, events, opts, cfg, true, st)
	if err != nil {
		_ = lg.Close()
		return nil, err
	}
	// A rewind that a crash cut short is finished before anything else.
	if err := s.repairRewind(context.Background()); err != nil {
		r.log.Warn("an interrupted rewind could not be finished", "session", s.id, "err", err)
	}
	return s, nil
}

func (r *Runtime) mergeConfig(c event.Config) event.Config {
	d := r.cfg.Defaults
	if c.Provider != "" {
		d.Provider = c.Provider
	}
	if c.Model != "" {
		d.Model = c.Model
	}
	if c.ReasoningEffort != "" {
		d.ReasoningEffort = c.ReasoningEffort
	}
	if c.MaxTokens > 0 {
		d.MaxTokens = c.MaxTokens
	}
	return d
}

func absCwd(cwd string) (string, error) {
	if cwd == "" {
		return "", fmt.Errorf("%w: a session needs a working directory", ErrBadInput)
	}
	if strings.ContainsRune(cwd, 0) {
		return "", fmt.Errorf("%w: cwd contains a NUL byte", ErrBadInput)
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", fmt.Errorf("%w: cwd %q: %v", ErrBadInput, cwd, err)
	}
	return abs, nil
}

// rulesFor returns the permission rules of the project of cwd, loaded once.
func (r *Runtime) rulesFor(cwd string) *permission.Rules {
	path := filepath.Join(r.cfg.Store.ProjectDir(cwd), "permissions.json")
	r.mu.Lock()
	defer r.mu.Unlock()
	if rs, ok := r.rules[path]; ok {
		return rs
	}
	rs, err := permission.LoadRules(path)
	if err != nil {
		r.log.Warn("permission rules unreadable; starting with none", "path", path, "err", err)
		rs, _ = permission.LoadRules("")
	}
	r.rules[path] = rs
	return rs
}

// OnSessionClose registers fn to run after a session of this runtime has
// closed (the subagent gateway closes the closed parent's idle children).
func (r *Runtime) OnSessionClose(fn func(sessionID string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onClose = append(r.onClose, fn)
}

func (r *Runtime) forget(s *Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sessions[s.id] == s {
		delete(r.sessions, s.id)
	}
}

func (r *Runtime) sessionClosed(s *Session) {
	id := s.id
	r.publish(s, Notice{Kind: NoticeClosed, SessionID: id})
	r.mu.Lock()
	hooks := append([]func(string){}, r.onClose...)
	r.mu.Unlock()
	for _, fn := range hooks {
		fn(id)
	}
}

// Close cancels every running turn, waits for the sessions to settle and
// closes their logs. It is safe to call more than once.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	ss := make([]*Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		ss = append(ss, s)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(ss))
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Close(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
