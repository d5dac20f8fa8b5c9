package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ResponseError is an error response from the runtime. Code is 0 when the
// wire code was not an integer; Message falls back to "JSON-RPC error".
// Error() is the message alone, so it reads exactly as the server wrote it
// (e.g. `SDK server is not initialized`).
type ResponseError struct {
	Code    int64
	Message string
	Data    []byte // raw JSON of `data`, nil when absent
}

func (e *ResponseError) Error() string { return e.Message }

// TransportClosedError says the connection to the runtime is gone. Reason
// is "JSON-RPC input closed" when the runtime's output ended (it exited or
// closed stdout) and "JSON-RPC transport closed" after Close. For a spawned
// runtime it carries the exit status, if known, and the last lines of its
// stderr.
type TransportClosedError struct {
	Reason string
	// Exited is true when the process had exited when the error was made.
	Exited bool
	// ExitCode is the exit code, -1 when killed by a signal.
	ExitCode int
	// Signal names the signal that ended the process, if any.
	Signal string
	// StderrTail holds the last lines the runtime wrote to stderr.
	StderrTail []string
}

func (e *TransportClosedError) Error() string {
	var b strings.Builder
	b.WriteString("DeepSeek Harness runtime transport closed: ")
	b.WriteString(e.Reason)
	if e.Exited {
		fmt.Fprintf(&b, "\nexit code: %d", e.ExitCode)
		if e.Signal != "" {
			fmt.Fprintf(&b, " (signal: %s)", e.Signal)
		}
	}
	if len(e.StderrTail) > 0 {
		b.WriteString("\nstderr tail:\n")
		b.WriteString(strings.Join(e.StderrTail, "\n"))
	}
	return b.String()
}

// TimeoutError is a request that got no response in time: either the
// client's configured timeout or the caller's ctx deadline. It matches
// context.DeadlineExceeded with errors.Is.
type TimeoutError struct {
	Method string
	After  time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s timed out after %dms waiting for the DeepSeek Harness runtime", e.Method, e.After.Milliseconds())
}

// Is makes errors.Is(err, context.DeadlineExceeded) true.
func (e *TimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// ProtocolError is a well-formed response or notification whose content
// breaks the protocol (a prompt result without messageId, a turn/end without
// a string reason kind, ...).
type ProtocolError struct {
	Msg string
}

func (e *ProtocolError) Error() string { return e.Msg }

// ErrSubscriptionClosed is returned by Next after Subscription.Close.
var ErrSubscriptionClosed = errors.New("notification subscription closed")

// ErrNoCommand is returned by Spawn for an empty Config.Command.
var ErrNoCommand = errors.New("client: Config.Command is empty")

// FilterPanicError fails a subscription whose filter panicked; other
// subscriptions are unaffected.
type FilterPanicError struct {
	Value any
}

func (e *FilterPanicError) Error() string {
	return fmt.Sprintf("notification filter panicked: %v", e.Value)
}

// OverflowError ends a subscription whose subscriber fell too far behind:
// its unread notifications reached Options.SubscriptionBufferBytes. The
// notifications queued before it stay readable.
type OverflowError struct {
	Queued int // notifications unread when it overflowed
	Bytes  int // their params bytes
	Limit  int
}

func (e *OverflowError) Error() string {
	return fmt.Sprintf("subscription overflowed: %d notifications (%d bytes) unread, limit %d bytes; read faster or raise Options.SubscriptionBufferBytes",
		e.Queued, e.Bytes, e.Limit)
}
