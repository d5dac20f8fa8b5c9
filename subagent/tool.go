package subagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/tool"
)

// ToolName is the model-facing name of the tool.
const ToolName = "subagent"

// NewTool returns the `subagent` tool, delegating to providers. Register
// it with rt.RegisterTool before the first session is created.
func NewTool(rt *core.Runtime, providers *Registry) tool.Tool {
	t := &subagentTool{rt: rt, reg: providers}
	rt.OnSessionClose(providers.pool.releaseParent)
	t.schema = t.buildSchema()
	t.desc = t.buildDescription()
	return t
}

type subagentTool struct {
	rt     *core.Runtime
	reg    *Registry
	schema json.RawMessage
	desc   string
	// types are the session's agent files (WithAgentTypes): each runs as
	// an in-process child limited to its tools, with its instructions.
	types []tool.AgentType
}

type args struct {
	Description string `json:"description"`
	Prompt      string `json:"prompt"`
	Agent       string `json:"agent"`
	// agentType is the agent file Agent names, when it names one.
	agentType *tool.AgentType
}

// WithAgentTypes is the tool for a session with agent files: the agent
// argument also takes their names.
func (t *subagentTool) WithAgentTypes(types []tool.AgentType) tool.Tool {
	c := *t
	for _, ty := range types {
		if _, clash := t.reg.providers[ty.Name]; clash {
			t.reg.log.Warn("subagent: an agent file has the name of a provider; the provider wins", "agent", ty.Name)
			continue
		}
		c.types = append(c.types, ty)
	}
	c.schema = c.buildSchema()
	c.desc = c.buildDescription()
	return &c
}

// agentNames are the values of the agent argument: the providers, then
// the agent types.
func (t *subagentTool) agentNames() []string {
	names := t.reg.Names()
	for _, ty := range t.types {
		names = append(names, ty.Name)
	}
	return names
}

func (t *subagentTool) Name() string            { return ToolName }
func (t *subagentTool) Description() string     { return t.desc }
func (t *subagentTool) Schema() json.RawMessage { return t.schema }
func (t *subagentTool) Kind() tool.Kind         { return tool.KindExecute }
func (t *subagentTool) ParallelSafe() bool      { return true }

func (t *subagentTool) buildDescription() string {
	var b strings.Builder
	b.WriteString("Delegate a self-contained task to a subagent: a separate agent with a fresh context that works " +
		"on the task to its end and returns its final answer. Use it for independent research or work that would " +
		"clutter your context. The subagent cannot see this conversation: give it a complete, standalone prompt " +
		"and say what it should return. Several subagent calls in one step run in parallel.\n\nAgents:")
	for _, name := range t.reg.Names() {
		p := t.reg.providers[name]
		fmt.Fprintf(&b, "\n- %s: %s", name, describeProvider(p))
		if name == t.reg.def {
			b.WriteString(" (default)")
		}
	}
	if len(t.types) > 0 {
		b.WriteString("\n\nAgent types (an agent file of this project or user: a child session in this process with only " +
			"the type's tools and its instructions; prefer one whose description fits the task):")
		for _, ty := range t.types {
			fmt.Fprintf(&b, "\n- %s: %s", ty.Name, ty.Description)
		}
	}
	return b.String()
}

func describeProvider(p *provider) string {
	switch {
	case p.protocol == ProtocolInproc:
		return "a child session in this process"
	case p.self && p.protocol == ProtocolSDK:
		return "a separate dsh process, over the SDK protocol"
	case p.self:
		return "a separate dsh process, over ACP"
	case p.protocol == ProtocolSDK:
		return "an SDK-protocol agent (" + p.command[0] + ")"
	}
	return "an ACP agent (" + p.command[0] + ")"
}

func (t *subagentTool) buildSchema() json.RawMessage {
	type prop struct {
		Type        string   `json:"type"`
		Description string   `json:"description"`
		Enum        []string `json:"enum,omitempty"`
	}
	type props struct {
		Description prop `json:"description"`
		Prompt      prop `json:"prompt"`
		Agent       prop `json:"agent"`
	}
	s := struct {
		Type                 string   `json:"type"`
		Properties           props    `json:"properties"`
		Required             []string `json:"required"`
		AdditionalProperties bool     `json:"additionalProperties"`
	}{
		Type: "object",
		Properties: props{
			Description: prop{Type: "string", Description: "A short (3-5 word) description of the task"},
			Prompt:      prop{Type: "string", Description: "The task for the subagent to perform"},
			Agent:       prop{Type: "string", Description: "Which agent runs the task (default " + t.reg.def + ")", Enum: t.agentNames()},
		},
		Required: []string{"description", "prompt"},
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // static shape
	}
	return b
}

// parse validates the arguments and resolves the provider.
func (t *subagentTool) parse(raw json.RawMessage) (args, *provider, error) {
	var a args
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return a, nil, fmt.Errorf("expected a JSON object, got %s", preview(raw))
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return a, nil, fmt.Errorf("%s must be a string", te.Field)
		}
		return a, nil, fmt.Errorf("malformed JSON: %w", err)
	}
	switch {
	case strings.TrimSpace(a.Description) == "":
		return a, nil, errors.New("description is required: a short (3-5 word) description of the task")
	case strings.TrimSpace(a.Prompt) == "":
		return a, nil, errors.New("prompt is required: the task for the subagent")
	}
	name := a.Agent
	if name == "" {
		name = t.reg.def
	}
	p, ok := t.reg.providers[name]
	if !ok {
		for i := range t.types {
			if t.types[i].Name == name {
				a.agentType = &t.types[i]
				return a, t.reg.providers[ProviderInproc], nil
			}
		}
		return a, nil, fmt.Errorf("unknown agent %q; available: %s", a.Agent, strings.Join(t.agentNames(), ", "))
	}
	return a, p, nil
}

func (t *subagentTool) Inspect(raw json.RawMessage, _ *tool.Env) (tool.Access, error) {
	a, p, err := t.parse(raw)
	if err != nil {
		return tool.Access{}, err
	}
	who := p.name
	if a.agentType != nil {
		who = a.agentType.Name
	}
	return tool.Access{Title: fmt.Sprintf("Subagent (%s): %s", who, a.Description)}, nil
}

func (t *subagentTool) Run(ctx context.Context, raw json.RawMessage, env *tool.Env) tool.Result {
	a, p, err := t.parse(raw)
	if err != nil {
		return tool.ErrorResult("invalid arguments for subagent: " + err.Error())
	}
	parent := t.rt.Get(env.SessionID)
	if parent == nil {
		return tool.ErrorResult(fmt.Sprintf("subagent: the parent session %q is not live in this runtime", env.SessionID))
	}
	depth := parent.Header().DelegationDepth + 1
	if max := t.rt.MaxDepth(); depth > max {
		return tool.ErrorResult(fmt.Sprintf("delegation depth limit reached: this session runs at delegation depth %d and "+
			"subagents may nest at most %d deep, so no subagent was started; do this task yourself",
			depth-1, max))
	}
	cwd := p.cwd
	if cwd == "" {
		cwd = env.Cwd
	}
	if cwd == "" {
		cwd = parent.Cwd()
	}
	run := call{t: t, p: p, a: a, env: env, parent: parent, cwd: cwd, depth: depth}
	var o outcome
	if p.protocol == ProtocolInproc {
		o = run.inproc(ctx)
	} else {
		o = run.remote(ctx)
	}
	o.Output = boundOutput(o.Output, o.Child, p.name, env)
	return o.result()
}

// call is one subagent call.
type call struct {
	t      *subagentTool
	p      *provider
	a      args
	env    *tool.Env
	parent *core.Session
	cwd    string
	depth  int
}

func (c *call) record(ev event.Event) {
	if c.env.Record == nil {
		return
	}
	if err := c.env.Record(ev); err != nil {
		c.t.reg.log.Warn("subagent: event not recorded in the parent's log", "type", ev.Type, "err", err)
	}
}

func (c *call) start(childID string) {
	c.record(event.New(event.TypeSubagentStart, event.SubagentStart{CallID: c.env.CallID, Provider: c.p.name,
		ChildSessionID: childID, Description: c.a.Description}))
}

func (c *call) end(childID string, o outcome, local bool) {
	c.record(event.New(event.TypeSubagentEnd, event.SubagentEnd{CallID: c.env.CallID, Provider: c.p.name,
		ChildSessionID: childID, StopReason: o.StopReason, Local: local, Output: o.Output}))
}

// notStarted is the outcome of a call that never reached a child.
func notStarted(ctx context.Context, err error) outcome {
	if ctx.Err() != nil {
		return outcome{StopReason: StopAborted, Diagnostic: "the parent's turn was cancelled before the subagent started"}
	}
	return outcome{StopReason: StopError, Diagnostic: err.Error()}
}

// inproc runs the task in a child session of this runtime.
func (c *call) inproc(ctx context.Context) outcome {
	if ctx.Err() != nil {
		return notStarted(ctx, nil)
	}
	var streamed lockedText
	cfg, agentType := c.parent.Config(), ""
	if ty := c.a.agentType; ty != nil {
		agentType = ty.Name
		if ty.Model != "" {
			cfg.Model = ty.Model
		}
	}
	child, err := c.t.rt.Create(ctx, core.SessionOptions{
		Cwd: c.cwd, AdditionalDirs: c.parent.AdditionalDirs(), Config: cfg, PermissionMode: c.parent.Mode(),
		Asker: parentAsker{c.parent, c.parentCall()},
		Files: c.env.Files, Exec: c.env.Exec, ParentSession: c.parent.ID(), Depth: c.depth, Origin: "subagent",
		OnDelta: streamed.onDelta, AgentType: agentType,
	})
	if err != nil {
		return notStarted(ctx, fmt.Errorf("could not create the child session: %w", err))
	}
	c.start(child.ID())
	o, settled := c.runChild(ctx, child, &streamed)
	closeChild := func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := child.Close(cctx); err != nil {
			c.t.reg.log.Warn("subagent: child session close", "session", child.ID(), "err", err)
		}
	}
	if settled {
		closeChild()
	} else {
		// The child's turn ignores its cancel (a tool deaf to its ctx):
		// the parent's turn does not wait for it; Registry.Close does.
		c.t.reg.background(closeChild)
	}
	c.end(child.ID(), o, true)
	o.Child = child.ID()
	return o
}

// runChild prompts the child and waits for its turn; settled is false when
// a cancelled child did not stop within cancelGrace.
func (c *call) runChild(ctx context.Context, child *core.Session, streamed *lockedText) (o outcome, settled bool) {
	tk, err := child.Prompt(ctx, []event.ContentBlock{event.Text(c.a.Prompt)})
	if err != nil {
		return notStarted(ctx, fmt.Errorf("the child session refused the prompt: %w", err)), true
	}
	cancelled := false
	select {
	case <-tk.Done():
	case <-ctx.Done():
		cancelled = true
		child.Cancel(core.ErrCancelledByParent)
		t := time.NewTimer(c.t.reg.cancelGrace)
		select {
		case <-tk.Done():
			t.Stop()
		case <-t.C:
			// The turn did not settle (a tool ignoring its ctx): report
			// what we have; the session is closed in the background.
			return outcome{StopReason: StopAborted, Output: streamed.String(),
				Diagnostic: "the parent's turn was cancelled; the child did not stop in time"}, false
		}
	}
	res := tk.Result()
	o.StopReason, o.Diagnostic = fromTurnEnd(res.Reason)
	o.Output = res.Text
	if o.Output == "" {
		o.Output = streamed.String()
	}
	if cancelled {
		o.StopReason, o.Diagnostic = StopAborted, "the parent's turn was cancelled"
	}
	return o, true
}

// remote runs the task in a child process, pooled when the provider allows.
func (c *call) remote(ctx context.Context) outcome {
	r := c.t.reg
	if ctx.Err() != nil {
		return notStarted(ctx, nil)
	}
	argv := c.p.command
	if c.p.self {
		if len(r.self) == 0 {
			return notStarted(ctx, fmt.Errorf("agent %s runs this dsh binary, but the gateway was not told its path", c.p.name))
		}
		argv = append(append([]string(nil), r.self...), c.p.protocol)
	}
	cfg := c.parent.Config()
	spec := spawnSpec{name: c.p.name, argv: argv, env: r.childEnv(c.p, cfg, c.parent.Mode(), c.depth, c.parent.ID()),
		cwd: c.cwd, cfg: cfg, parent: c.parent}
	key := poolKey{parent: c.parent.ID(), provider: c.p.name}
	sig := signature(spec)

	var ch *child
	var sid string
	for attempt := 0; ; attempt++ {
		reused := false
		if c.p.pool && attempt == 0 {
			var err error
			if ch, err = r.take(key, sig); err != nil {
				return notStarted(ctx, err)
			}
			reused = ch != nil
		}
		if !reused {
			var err error
			if ch, err = r.spawnChild(ctx, c.p, spec, key, sig); err != nil {
				return notStarted(ctx, err)
			}
		}
		ch.setCall(ctx, c.parentCall())
		var err error
		if sid, err = ch.open(ctx); err == nil {
			break
		}
		ch.clearCall()
		r.release(ch, false, 0)
		// A pooled child may have died while idle: one fresh try.
		if !reused || ctx.Err() != nil {
			return notStarted(ctx, err)
		}
		r.log.Debug("subagent: a pooled child failed session/new; spawning a fresh one", "agent", c.p.name, "err", err)
	}
	c.start(sid)
	rep := c.reporter(sid)
	o, clean := r.drive(ctx, ch, sid, c.a.Prompt, rep)
	rep.close() // its progress is in the log before subagent/end
	cancelled := ctx.Err() != nil
	reusable := c.p.pool && clean && ch.finish(context.WithoutCancel(ctx), sid)
	if cancelled && !reusable {
		// The parent's turn is being cancelled: the child goes now, within
		// the 2 s budget, not after the full close ladder.
		kctx, cancel := context.WithTimeout(context.Background(), r.killWait)
		_ = ch.close(kctx)
		cancel()
	}
	// Before release: once released, the child may serve another call.
	ch.clearCall()
	r.release(ch, reusable, c.p.idle)
	c.end(sid, o, false)
	o.Child = sid
	return o
}

// drive runs one prompt on ch. When ctx ends first the child is asked to
// cancel (session/cancel) and given cancelGrace to stop; one that does not
// is killed. clean reports whether the child is still fit for reuse.
func (r *Registry) drive(ctx context.Context, ch *child, sid, text string, rep *reporter) (o outcome, clean bool) {
	runCtx, hard := context.WithCancel(context.Background())
	defer hard()
	done := make(chan runResult, 1)
	go func() { done <- ch.prompt(runCtx, sid, text, rep) }()
	select {
	case res := <-done:
		return res.outcome, !res.broken
	case <-ctx.Done():
	}
	select {
	case res := <-done: // it finished as the cancel came
		return res.outcome, !res.broken
	default:
	}
	ch.cancel(sid)
	t := time.NewTimer(r.cancelGrace)
	defer t.Stop()
	var res runResult
	clean = true
	diag := "the parent's turn was cancelled"
	select {
	case res = <-done:
		clean = !res.broken
	case <-t.C:
		clean = false
		diag += fmt.Sprintf("; the child did not stop within %v and was killed", r.cancelGrace)
		// A child that ignored session/cancel gets no polite ladder: it is
		// killed now (a done ctx skips the grace periods) and reaped.
		hard()
		kctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = ch.close(kctx)
		res = <-done
	}
	return outcome{StopReason: StopAborted, Output: res.Output, Diagnostic: diag}, clean
}

// spawnChild spawns a child and adopts it into the pool as busy.
func (r *Registry) spawnChild(ctx context.Context, p *provider, spec spawnSpec, key poolKey, sig string) (*child, error) {
	sctx, done, err := r.beginSpawn(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	rem, err := r.spawn(sctx, p, spec)
	if err != nil {
		if ctx.Err() == nil && sctx.Err() != nil {
			return nil, errGatewayClosed
		}
		return nil, err
	}
	ch := &child{remote: rem, key: key, sig: sig}
	if err := r.adopt(ch); err != nil {
		kctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = rem.close(kctx)
		return nil, err
	}
	return ch, nil
}

// spawn starts a child of p's protocol.
func (r *Registry) spawn(ctx context.Context, p *provider, s spawnSpec) (remote, error) {
	switch p.protocol {
	case ProtocolSDK:
		c, err := spawnSDK(ctx, r, s)
		if err != nil {
			return nil, err
		}
		return c, nil
	case ProtocolACP:
		c, err := spawnACP(ctx, r, s)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	return nil, fmt.Errorf("agent %s: protocol %q has no process", p.name, p.protocol)
}

// signature identifies what a child was spawned with; a pooled child is
// reused only for a call that would spawn the same.
func signature(s spawnSpec) string {
	var b strings.Builder
	for _, part := range [][]string{s.argv, s.env, {s.cwd, s.cfg.Provider, s.cfg.Model, s.cfg.ReasoningEffort, fmt.Sprint(s.cfg.MaxTokens)}} {
		for _, x := range part {
			b.WriteString(x)
			b.WriteByte(0)
		}
		b.WriteByte(1)
	}
	return b.String()
}

// parentCall is the parent's subagent call a child serves.
type parentCall struct{ id, provider string }

func (c *call) parentCall() parentCall { return parentCall{id: c.env.CallID, provider: c.p.name} }

// decide answers a child's permission request with the parent session's
// gate. The request is put as one about the parent's subagent call: the
// parent's client knows that call, not the child's own (an ACP door waits
// for the tool_call of the call it asks about, so a child's call id hung
// the ask for good); the title says what the child wants to do. An allow
// is passed on as allow once: if the parent's client chose "always", the
// parent's gate already remembered it.
func decide(ctx context.Context, parent *core.Session, call parentCall, req permission.Request) permission.Answer {
	if ctx.Err() != nil {
		return permission.Cancelled
	}
	if call.id != "" {
		req.CallID = call.id
		what := req.Title
		if what == "" {
			what = req.Tool
		}
		req.Title = fmt.Sprintf("Subagent (%s): %s", call.provider, what)
	}
	d := parent.Decide(ctx, req)
	switch {
	case d.Cancelled || ctx.Err() != nil:
		return permission.Cancelled
	case d.Allow:
		return permission.AllowOnce
	}
	return permission.RejectOnce
}

// parentAsker is an in-process child's Asker: whatever the child's gate
// would ask a person, the parent's gate decides.
type parentAsker struct {
	parent *core.Session
	call   parentCall
}

func (a parentAsker) Ask(ctx context.Context, req permission.Request) (permission.Answer, error) {
	return decide(ctx, a.parent, a.call, req), nil
}
