package subagent

import (
	"strings"
	"sync"

	"github.com/dsh-dev/dsh/core/event"
)

// An out-of-process child's events stay in its process: the parent's log
// (and every door projecting it) would see nothing of a dsh-sdk or ACP
// child until its call ends. So the gateway commits what the child reports
// to the parent's log as subagent/progress: one event per child tool call
// start, and one per completed child message (a dsh child's
// assistant/message; for an ACP agent, the text streamed before its next
// tool call, or before the prompt's answer). Streamed chunks are never
// reported one by one.
//
// The child's events are delivered on goroutines that must not wait on the
// parent's log: the SDK client fails a subscription that falls behind, and
// an ACP agent's notifications are read on the connection's one reading
// goroutine. A commit can wait for a long time (another commit's fsync, a
// slow door subscribed to the runtime), so a reporter queues what the
// child reports and one goroutine records it. The queue is bounded: a
// message still queued is replaced by the next one (only the latest is
// worth showing), and beyond maxQueuedProgress the oldest entry is dropped;
// the next recorded event counts the dropped tool calls in Skipped.

// maxQueuedProgress bounds the progress waiting for the parent's log.
const maxQueuedProgress = 64

// progressItem is one queued report; a tool call without a title carries
// its name and arguments, titled by the writer.
type progressItem struct {
	p          event.SubagentProgress
	name, args string
}

// reporter records one call's child progress in the parent's log.
type reporter struct {
	record func(event.Event) // logs a failed Record; never fails the call
	title  func(name, args string) string

	mu      sync.Mutex
	queue   []progressItem
	skipped int
	closed  bool
	wake    chan struct{}
	done    chan struct{}
	base    event.SubagentProgress // callId and childSessionId
}

// reporter starts the reporter of this call's child session childID.
func (c *call) reporter(childID string) *reporter {
	return newReporter(event.SubagentProgress{CallID: c.env.CallID, ChildSessionID: childID}, c.record, toolTitle)
}

// newReporter starts a reporter whose events carry base's ids; close it.
func newReporter(base event.SubagentProgress, record func(event.Event), title func(name, args string) string) *reporter {
	r := &reporter{record: record, title: title, base: base, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go r.run()
	return r
}

// toolCall reports a child tool call: its title as the child gave it, or
// (title "") one made from the tool's name and arguments.
func (r *reporter) toolCall(title, name, args string) {
	p := r.base
	p.Kind, p.Title = event.ProgressToolCall, title
	r.put(progressItem{p: p, name: name, args: args}, false)
}

// message reports a completed child message; one without text is not.
func (r *reporter) message(content []event.ContentBlock) {
	text := event.ProgressText(content)
	if text == "" {
		return
	}
	p := r.base
	p.Kind, p.Text = event.ProgressMessage, text
	r.put(progressItem{p: p}, true)
}

func (r *reporter) put(it progressItem, coalesce bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if n := len(r.queue); coalesce && n > 0 && r.queue[n-1].p.Kind == event.ProgressMessage {
		r.queue[n-1] = it
	} else {
		if n >= maxQueuedProgress {
			if r.queue[0].p.Kind == event.ProgressToolCall {
				r.skipped++
			}
			r.queue = append(r.queue[:0], r.queue[1:]...)
		}
		r.queue = append(r.queue, it)
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// run records what is queued until close.
func (r *reporter) run() {
	defer close(r.done)
	for {
		r.mu.Lock()
		q, skipped, closed := r.queue, r.skipped, r.closed
		r.queue, r.skipped = nil, 0
		r.mu.Unlock()
		for i, it := range q {
			if it.p.Kind == event.ProgressToolCall && it.p.Title == "" {
				it.p.Title = r.title(it.name, it.args)
			}
			if i == 0 {
				it.p.Skipped = skipped
			}
			r.record(event.New(event.TypeSubagentProgress, it.p))
		}
		if closed && len(q) == 0 {
			return
		}
		if len(q) == 0 {
			<-r.wake
		}
	}
}

// close records what is still queued and returns when it is in the log,
// so every progress event of a call precedes its subagent/end. Later
// reports are dropped.
func (r *reporter) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	<-r.done
}

// toolTitle titles a child's tool call that came without a title (a dsh
// child older than recorded tool facts): its name and the start of its
// arguments. The parent does not inspect the call with its own tools: the
// child's were what ran.
func toolTitle(name, args string) string {
	title := name
	if r := []rune(strings.TrimSpace(args)); len(r) > 60 {
		title += " " + string(r[:60]) + "…"
	} else if len(r) > 0 {
		title += " " + string(r)
	}
	return title
}
