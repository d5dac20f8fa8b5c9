package core

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/mcp"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/tool"
)

// defaultMCPStartWait is how long opening a session waits for its MCP
// servers before it answers; a slower server's tools join at a turn
// boundary once it is ready.
const defaultMCPStartWait = 1500 * time.Millisecond

// toolset is one tool list as the model sees it: sorted by name, with its
// specs and the JSON recorded in request/header. It never changes once
// built; a session swaps in a new one at a turn boundary.
type toolset struct {
	tools  []tool.Tool
	byName map[string]tool.Tool
	specs  []model.ToolSpec
	json   []byte
	// withheld are the names of the tools left out because the deny list
	// names them whole: they exist, they are not offered.
	withheld []string
	// base and mcpVersion are what the set was built from.
	base       *toolset
	mcpVersion uint64
}

// offer builds the toolset of ts without the tools the runtime's deny
// list names whole (--disallowed-tools bash): the model is never offered
// a tool every call of which would be refused. withheld adds names left
// out of an earlier list (the base's, under a session's).
func (r *Runtime) offer(ts []tool.Tool, withheld []string) *toolset {
	lists := r.cfg.ToolLists
	kept := ts
	if len(lists.Deny) > 0 {
		kept = make([]tool.Tool, 0, len(ts))
		for _, t := range ts {
			if lists.Withholds(t.Name()) {
				withheld = append(withheld, t.Name())
				continue
			}
			kept = append(kept, t)
		}
	}
	set := newToolset(kept)
	set.withheld = withheld
	return set
}

func newToolset(ts []tool.Tool) *toolset {
	ts = tool.Sort(ts)
	t := &toolset{tools: ts, byName: make(map[string]tool.Tool, len(ts)), specs: make([]model.ToolSpec, len(ts))}
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range ts {
		t.byName[x.Name()] = x
		t.specs[i] = model.ToolSpec{Name: x.Name(), Description: x.Description(), Parameters: x.Schema()}
		if i > 0 {
			b.WriteByte(',')
		}
		desc, _ := json.Marshal(x.Description())
		fmt.Fprintf(&b, `{"name":%q,"description":%s,"parameters":%s}`, x.Name(), desc, x.Schema())
	}
	b.WriteByte(']')
	t.json = []byte(b.String())
	return t
}

// baseTools is the runtime's own tool list (built-ins and registered).
// It is built outside the lock on first use (bash's description waits for
// the sandbox's probe, which runs while a door answers its first
// requests); a racing builder keeps the first one stored, so the pointer
// stays the one every session compares against.
func (r *Runtime) baseTools() *toolset {
	r.mu.Lock()
	b, ts, gen := r.base, r.tools, r.gen
	r.mu.Unlock()
	if b != nil {
		return b
	}
	b = r.offer(ts, nil)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.base != nil:
		return r.base
	case r.gen == gen:
		r.base = b
	}
	return b
}

// sessionTools builds a session's tool list: the runtime's, plus the
// tools of its MCP servers that are ready now, plus the skill tool when
// the session has skills; a typed subagent keeps only its type's tools.
func (s *Session) sessionTools() *toolset {
	base := s.rt.baseTools()
	var mt []tool.Tool
	var v uint64
	if s.mcp != nil {
		mt, v = s.mcp.Tools()
	}
	if len(s.ext.skills) > 0 {
		mt = append(mt, skillTool{skills: s.ext.skills})
	}
	if s.mcp != nil && s.mcp.HasResources() {
		mt = append(mt, resourceTools(s.mcp)...)
	}
	if len(mt) == 0 && (s.ext.agent == nil || s.ext.agent.Tools == nil) && len(s.ext.agents) == 0 {
		ts := *base
		ts.base, ts.mcpVersion = base, v
		return &ts
	}
	all := append(append([]tool.Tool(nil), base.tools...), mt...)
	if types := s.agentTypes(); len(types) > 0 {
		for i, t := range all {
			if at, ok := t.(tool.AgentTyped); ok {
				all[i] = at.WithAgentTypes(types)
			}
		}
	}
	if a := s.ext.agent; a != nil && a.Tools != nil {
		all = slices.DeleteFunc(all, func(t tool.Tool) bool { return !slices.Contains(a.Tools, t.Name()) })
	}
	ts := s.rt.offer(all, base.withheld)
	ts.base, ts.mcpVersion = base, v
	return ts
}

// refreshTools takes the tool list's changes at a turn boundary: an MCP
// server that became ready, changed its tools or died. Within a turn the
// list (and so the request prefix) never moves.
func (s *Session) refreshTools() {
	s.mu.Lock()
	cur := s.ts
	s.mu.Unlock()
	if cur != nil && cur.base == s.rt.baseTools() && (s.mcp == nil || cur.mcpVersion == s.mcp.Version()) {
		return
	}
	next := s.sessionTools()
	s.mu.Lock()
	s.ts = next
	s.mu.Unlock()
}

// tools returns the session's current tool list.
func (s *Session) tools() *toolset {
	s.mu.Lock()
	ts := s.ts
	s.mu.Unlock()
	if ts == nil {
		return s.rt.baseTools()
	}
	return ts
}

func (s *Session) findTool(name string) tool.Tool { return s.tools().byName[name] }

// Tools returns the tools the session's model is offered now, sorted by
// name: the runtime's and its MCP servers'.
func (s *Session) Tools() []tool.Tool { return append([]tool.Tool(nil), s.tools().tools...) }

// MCPServers returns the session's usable MCP server configurations.
func (s *Session) MCPServers() []mcp.ServerConfig { return s.mcp.Configs() }

// MCPStatus returns the state of the session's MCP servers (for /mcp).
func (s *Session) MCPStatus() []mcp.Status { return s.mcp.Status() }

// startMCP starts the session's MCP servers (the runtime's configured ones
// and the door's), or shares its parent's when the session is an
// in-process subagent child. It waits for them a short while only. A
// session that owns its servers always has a set, even an empty one, so
// that AddMCPServers can add to it while the session is live.
func (s *Session) startMCP(opts SessionOptions) {
	if opts.ParentSession != "" {
		if p := s.rt.Get(opts.ParentSession); p != nil && p.mcp != nil {
			s.mcp = p.mcp // the parent owns and closes it
			s.refreshTools()
			return
		}
	}
	base := s.rt.baseTools()
	s.mcp = mcp.Start(mcp.Merge(s.rt.cfg.MCPServers, opts.MCPServers), mcp.Options{
		Cwd:          s.header.Cwd,
		Version:      s.rt.cfg.Version,
		StartTimeout: s.rt.cfg.MCPStartTimeout,
		Logger:       s.rt.log.With("session", s.id),
		Reserved:     func(name string) bool { return base.byName[name] != nil },
		OnStatus:     s.recordMCPStatus,
		Restart:      mcp.RestartPolicy{Max: s.rt.cfg.MCPRestarts},
		NetworkOff:   s.rt.cfg.NetworkOff,
	})
	s.ownMCP = true
	s.waitMCP()
	s.refreshTools()
}

// waitMCP waits for the servers still starting, at most the start wait.
func (s *Session) waitMCP() {
	if !s.mcp.Starting() {
		return
	}
	wait := s.rt.cfg.MCPStartWait
	if wait == 0 {
		wait = defaultMCPStartWait
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	s.mcp.WaitStarted(ctx)
	cancel()
}

// AddMCPServers connects the servers of cfgs the live session does not
// have yet (an ACP client reopening it sends its list again); one of a
// name the session has is kept as it is. It waits for them as opening a
// session does; their tools join at the next turn. It returns the names
// it started. A subagent child shares its parent's servers and adds none.
func (s *Session) AddMCPServers(cfgs []mcp.ServerConfig) []string {
	if !s.ownMCP || len(cfgs) == 0 {
		return nil
	}
	added := s.mcp.Add(cfgs)
	if len(added) > 0 {
		s.waitMCP()
	}
	return added
}

// recordMCPStatus records a server's change of state in the log, where
// every door sees it (the ACP door tells the user of a failure).
func (s *Session) recordMCPStatus(st mcp.Status) {
	s.recordMCP(st, true)
}

// recordMCP records st; live says it happened after the session was
// announced (not a report held back while it was being created).
func (s *Session) recordMCP(st mcp.Status, live bool) {
	s.mcpMu.Lock()
	if !s.mcpLive {
		s.mcpPending = append(s.mcpPending, st)
		s.mcpMu.Unlock()
		return
	}
	s.mcpMu.Unlock()
	ev := event.New(event.TypeMCPServer, event.MCPServer{Server: st.Name, Transport: string(st.Transport),
		Source: st.Source, State: string(st.State), Tools: st.Tools, Error: st.Error, Note: st.Note, Restarts: st.Restarts,
		Late: live && st.State == mcp.StateReady && st.Restarts == 0})
	if err := s.Record(ev); err != nil {
		s.rt.log.Debug("mcp status not recorded", "session", s.id, "server", st.Name, "err", err)
	}
}

// mcpAnnounced records the server reports held back while the session
// was being created: no event of a session is published before the
// runtime has announced it.
func (s *Session) mcpAnnounced() {
	s.mcpMu.Lock()
	if s.mcpLive {
		s.mcpMu.Unlock()
		return
	}
	s.mcpLive = true
	pending := s.mcpPending
	s.mcpPending = nil
	s.mcpMu.Unlock()
	for _, st := range pending {
		s.recordMCP(st, false)
	}
}

// closeMCP stops the servers the session owns.
func (s *Session) closeMCP(ctx context.Context) error {
	if !s.ownMCP {
		return nil
	}
	return s.mcp.Close(ctx)
}

// MCPStarting names the session's MCP servers still starting, sorted.
func (s *Session) MCPStarting() []string {
	var out []string
	for _, st := range s.mcp.Status() {
		if st.State == mcp.StateStarting {
			out = append(out, st.Name)
		}
	}
	return out
}

// MCPStartTimeout is how long one MCP server may take to start.
func (s *Session) MCPStartTimeout() time.Duration {
	if d := s.rt.cfg.MCPStartTimeout; d > 0 {
		return d
	}
	return mcp.DefaultStartTimeout
}

// WaitMCP waits until every MCP server of the session is ready or has
// failed (each is bounded by its start timeout), or ctx ends, and takes
// their tools into the list the next turn offers. A headless run calls it
// before its only turn: a server that is still starting then (a first
// npx -y) would otherwise be missing for the whole run.
func (s *Session) WaitMCP(ctx context.Context) bool {
	if !s.ownMCP {
		return true
	}
	ok := s.mcp.WaitStarted(ctx)
	s.refreshTools()
	return ok
}
