package subagent

import (
	"context"
	"errors"
	"sync"
	"time"
)

// errGatewayClosed is returned for runs after Registry.Close.
var errGatewayClosed = errors.New("the subagent gateway is closed")

// maxIdlePerKey bounds the idle children kept for one (parent, provider):
// parallel calls spawn several, and more than a few idle ones only cost
// memory.
const maxIdlePerKey = 4

// remote is one child process speaking a provider's protocol. A child
// serves one run at a time.
type remote interface {
	// open starts a fresh child session and returns its id.
	open(ctx context.Context) (string, error)
	// prompt runs text in session sid to its end, reporting the child's
	// progress to rep as it goes. It returns promptly once ctx is done (the
	// run is then abandoned, not stopped: see cancel); rep is not used
	// after it returns.
	prompt(ctx context.Context, sid, text string, rep *reporter) runResult
	// cancel asks the child to stop sid's run; it does not wait.
	cancel(sid string)
	// finish tidies sid after a run of a child that goes back to the pool;
	// false means the child is not fit for reuse.
	finish(ctx context.Context, sid string) bool
	// setCall sets the ctx of the current call and the parent's subagent
	// call it serves: the child's permission requests are answered within
	// ctx, as requests about that call.
	setCall(ctx context.Context, call parentCall)
	// clearCall records that no call is running: the child's requests are
	// refused at once until the next setCall.
	clearCall()
	// healthy reports whether the connection and process are alive.
	healthy() bool
	// close ends the process (the close ladder; a done ctx kills) and
	// reaps it. Idempotent; concurrent callers wait for the first, and a
	// caller whose ctx is done hurries it.
	close(ctx context.Context) error
	pid() int
}

// runResult is what one prompt produced.
type runResult struct {
	outcome
	// broken: the child failed in a way that leaves it unfit for reuse
	// (transport gone, protocol error).
	broken bool
}

type poolKey struct{ parent, provider string }

// child is a pooled remote.
type child struct {
	remote
	key   poolKey
	sig   string // spawn signature: a child is reused only for the same
	timer *time.Timer
}

// pool keeps the live children: idle ones by key, busy ones until their
// run ends.
type pool struct {
	mu     sync.Mutex
	closed bool
	idle   map[poolKey][]*child
	live   map[*child]struct{}
	// bg tracks background closes; hurry makes them kill at once.
	bg     sync.WaitGroup
	hurry  context.Context
	hurryF context.CancelFunc
	// spawning tracks spawns in progress; closing aborts them.
	spawning sync.WaitGroup
	closing  context.Context
	closingF context.CancelFunc
}

func (p *pool) init() {
	p.idle = map[poolKey][]*child{}
	p.live = map[*child]struct{}{}
	p.hurry, p.hurryF = context.WithCancel(context.Background())
	p.closing, p.closingF = context.WithCancel(context.Background())
}

// beginSpawn registers a spawn about to start and returns its ctx (ctx,
// also cancelled when the pool closes) and the func to call when the spawn
// is over, after adopt or on failure.
func (p *pool) beginSpawn(ctx context.Context) (context.Context, func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, nil, errGatewayClosed
	}
	p.spawning.Add(1)
	sctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(p.closing, cancel)
	return sctx, func() {
		stop()
		cancel()
		p.spawning.Done()
	}, nil
}

// take returns an idle child of key with signature sig, or nil. Idle
// children of key with another signature (the parent changed model or
// mode) or that died are closed.
func (p *pool) take(key poolKey, sig string) (*child, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errGatewayClosed
	}
	list := p.idle[key]
	var got *child
	keep := list[:0]
	for _, c := range list {
		switch {
		case got == nil && c.sig == sig && c.healthy():
			got = c
			c.timer.Stop()
		case c.sig != sig || !c.healthy():
			c.timer.Stop()
			delete(p.live, c)
			p.closeLocked(c)
		default:
			keep = append(keep, c)
		}
	}
	if len(keep) == 0 {
		delete(p.idle, key)
	} else {
		p.idle[key] = keep
	}
	return got, nil
}

// adopt registers a freshly spawned child as live (busy). After Close it
// fails, and the caller must close the child.
func (p *pool) adopt(c *child) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errGatewayClosed
	}
	p.live[c] = struct{}{}
	return nil
}

// release returns a child after a run: to the idle list when reusable,
// else it is closed in the background. A child that is no longer live was
// taken over by closeAll, which closes it.
func (p *pool) release(c *child, reusable bool, idle time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, live := p.live[c]; !live {
		return
	}
	if !reusable || len(p.idle[c.key]) >= maxIdlePerKey {
		delete(p.live, c)
		p.closeLocked(c)
		return
	}
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	p.idle[c.key] = append(p.idle[c.key], c)
	c.timer = time.AfterFunc(idle, func() { p.expire(c) })
}

// expire closes c if it is still idle.
func (p *pool) expire(c *child) {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.idle[c.key]
	for i, x := range list {
		if x == c {
			p.idle[c.key] = append(list[:i:i], list[i+1:]...)
			if len(p.idle[c.key]) == 0 {
				delete(p.idle, c.key)
			}
			delete(p.live, c)
			p.closeLocked(c)
			return
		}
	}
}

// releaseParent closes the idle children of a parent session that has
// closed: they can serve no later call, so they should not wait out their
// idle timeout. (A session closes after its turn settles, so none of its
// children is busy then.)
func (p *pool) releaseParent(parent string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	for key, list := range p.idle {
		if key.parent != parent {
			continue
		}
		for _, c := range list {
			if c.timer != nil {
				c.timer.Stop()
			}
			delete(p.live, c)
			p.closeLocked(c)
		}
		delete(p.idle, key)
	}
}

// background runs fn aside, tracked so closeAll waits for it; after
// closeAll it runs fn at once.
func (p *pool) background(fn func()) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		fn()
		return
	}
	p.bg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.bg.Done()
		fn()
	}()
}

// closeLocked closes c in the background, tracked for closeAll. Callers
// hold p.mu and have checked the pool is open, so every bg.Add happens
// before closeAll's bg.Wait.
func (p *pool) closeLocked(c *child) {
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		_ = c.close(p.hurry)
	}()
}

// closeAll closes every live child and waits for every close, busy and
// background ones included.
func (p *pool) closeAll(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	cs := make([]*child, 0, len(p.live))
	for c := range p.live {
		if c.timer != nil {
			c.timer.Stop()
		}
		cs = append(cs, c)
	}
	p.live = map[*child]struct{}{}
	p.idle = map[poolKey][]*child{}
	p.mu.Unlock()
	p.closingF()

	stop := context.AfterFunc(ctx, p.hurryF)
	defer stop()
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.close(ctx)
		}()
	}
	wg.Wait()
	// Spawns in progress were aborted; they close what they started in
	// the background (adopt refuses it), so wait for them, then for every
	// background close.
	p.spawning.Wait()
	p.bg.Wait()
	return errors.Join(errs...)
}

// livePids returns the pids of the live children (tests).
func (p *pool) livePids() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for c := range p.live {
		out = append(out, c.pid())
	}
	return out
}

// idleCount returns how many children sit idle (tests).
func (p *pool) idleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, l := range p.idle {
		n += len(l)
	}
	return n
}

// closer makes a close idempotent: the first caller runs it, later callers
// wait, and a later caller whose ctx is done hurries the first (its ctx is
// cancelled, which makes a close ladder kill at once).
type closer struct {
	once      sync.Once
	hurryOnce sync.Once
	hurry     chan struct{}
	done      chan struct{}
	err       error
}

func newCloser() closer {
	return closer{hurry: make(chan struct{}), done: make(chan struct{})}
}

func (c *closer) do(ctx context.Context, fn func(context.Context) error) error {
	first := false
	c.once.Do(func() { first = true })
	if first {
		cctx, cancel := context.WithCancel(context.Background())
		stop := context.AfterFunc(ctx, cancel)
		go func() {
			select {
			case <-c.hurry:
				cancel()
			case <-c.done:
			}
		}()
		c.err = fn(cctx)
		stop()
		cancel()
		close(c.done)
		return c.err
	}
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		c.hurryOnce.Do(func() { close(c.hurry) })
		<-c.done
		return c.err
	}
}

// callCtx holds the ctx of a child's current call, so requests the child
// sends (permission asks) end when the call does, and the parent's call
// they are asked under.
type callCtx struct {
	mu   sync.Mutex
	ctx  context.Context
	call parentCall
}

func (c *callCtx) setCall(ctx context.Context, call parentCall) {
	c.mu.Lock()
	c.ctx, c.call = ctx, call
	c.mu.Unlock()
}

func (c *callCtx) clearCall() {
	c.mu.Lock()
	c.ctx, c.call = nil, parentCall{}
	c.mu.Unlock()
}

// within returns h bounded by the current call (cancelled at once when no
// call is running) and the parent's call.
func (c *callCtx) within(h context.Context) (context.Context, parentCall, context.CancelFunc) {
	c.mu.Lock()
	call, pc := c.ctx, c.call
	c.mu.Unlock()
	ctx, cancel := context.WithCancel(h)
	if call == nil {
		cancel()
		return ctx, pc, cancel
	}
	stop := context.AfterFunc(call, cancel)
	return ctx, pc, func() {
		stop()
		cancel()
	}
}
