package mcp

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// memServers serves every dial with a fresh in-memory MCP server (one
// tool), or with refuse's error when set, and records when each dial
// happened. It runs inside a synctest bubble: time is the bubble's.
type memServers struct {
	mu     sync.Mutex
	dials  []time.Time
	live   net.Conn // the server's end of the current connection
	refuse error
}

func (m *memServers) dial(ServerConfig) (sdk.Transport, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dials = append(m.dials, time.Now())
	if m.refuse != nil {
		return nil, m.refuse
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "mem", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "echo"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{}, nil, nil
	})
	client, server := net.Pipe()
	if _, err := srv.Connect(context.Background(), &sdk.IOTransport{Reader: server, Writer: server}, nil); err != nil {
		return nil, err
	}
	m.live = server
	return &sdk.IOTransport{Reader: client, Writer: client}, nil
}

// kill cuts the current server's connection, as a crash would.
func (m *memServers) kill(t *testing.T) {
	m.mu.Lock()
	c := m.live
	m.mu.Unlock()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// gaps returns the times between dials from the i-th on.
func (m *memServers) gaps(from int) []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []time.Duration
	for i := from + 1; i < len(m.dials); i++ {
		out = append(out, m.dials[i].Sub(m.dials[i-1]))
	}
	return out
}

// startMem starts one in-memory server under policy pol inside the
// bubble and waits until it is ready; statuses are sent to the channel.
func startMem(t *testing.T, pol RestartPolicy) (*Set, *memServers, chan Status) {
	m := &memServers{}
	status := make(chan Status, 1024)
	set := Start([]ServerConfig{{Name: "mem", Transport: TransportStdio, Command: "unused"}},
		Options{Cwd: t.TempDir(), Restart: pol, dial: m.dial, OnStatus: func(s Status) { status <- s }})
	if !set.WaitStarted(context.Background()) {
		t.Fatal("never started")
	}
	if st := set.Status(); len(st) != 1 || st[0].State != StateReady {
		set.Close(context.Background())
		t.Fatalf("status after start: %+v", st)
	}
	return set, m, status
}

// next waits for the next status of the given state, skipping others.
func next(t *testing.T, status chan Status, state State) Status {
	t.Helper()
	for st := range status {
		if st.State == state {
			return st
		}
	}
	t.Fatal("status channel closed")
	return Status{}
}

// TestRestartBackoffSchedule: a server that dies and then fails every
// restart is restarted after 200, 400 and 800 ms (the default backoff,
// doubling) and then given up, in the bubble's time: no sleeps, no
// slack.
func TestRestartBackoffSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		set, m, status := startMem(t, RestartPolicy{})
		defer set.Close(context.Background())
		m.mu.Lock()
		m.refuse = errors.New("connection refused")
		m.mu.Unlock()
		died := time.Now()
		m.kill(t)
		failed := next(t, status, StateFailed)
		m.mu.Lock()
		dials := append([]time.Time(nil), m.dials[1:]...)
		m.mu.Unlock()
		want := []time.Duration{200 * time.Millisecond, 600 * time.Millisecond, 1400 * time.Millisecond}
		if len(dials) != len(want) {
			t.Fatalf("%d restarts, want %d (%s)", len(dials), len(want), failed.Error)
		}
		for i, d := range dials {
			if got := d.Sub(died); got != want[i] {
				t.Errorf("restart %d at +%v, want +%v", i+1, got, want[i])
			}
		}
		if failed.Restarts != 3 {
			t.Errorf("failed after %d restarts, want 3: %+v", failed.Restarts, failed)
		}
	})
}

// TestRestartsNeverHotLoop: a server that comes up and dies at once, again
// and again, under a policy that allows many restarts, is restarted after
// pauses that double from the backoff and never shrink, so never in a hot
// loop, and that stop growing at MaxRestartBackoff (they grew without
// bound: the 20th restart waited 14 hours).
func TestRestartsNeverHotLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const kills = 20
		set, m, status := startMem(t, RestartPolicy{Max: 1000, Window: 24 * time.Hour, Backoff: 100 * time.Millisecond})
		defer set.Close(context.Background())
		for range kills {
			m.kill(t)
			next(t, status, StateRestarting)
			next(t, status, StateReady)
		}
		gaps := m.gaps(0)
		if len(gaps) != kills {
			t.Fatalf("%d restarts, want %d", len(gaps), kills)
		}
		prev := time.Duration(0)
		for i, g := range gaps {
			if g < 100*time.Millisecond || g < prev || g > MaxRestartBackoff {
				t.Fatalf("restart %d came %v after the one before (previous pause %v): %v", i+1, g, prev, gaps)
			}
			prev = g
		}
		if gaps[len(gaps)-1] != MaxRestartBackoff {
			t.Errorf("the pause settles at %v, want the cap %v", gaps[len(gaps)-1], MaxRestartBackoff)
		}
	})
}

// TestRestartWindowForgets: restarts older than the window no longer count
// (nor double the pause): a server that dies once an hour is restarted
// each time after the first pause.
func TestRestartWindowForgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		set, m, status := startMem(t, RestartPolicy{Max: 2, Window: 10 * time.Minute, Backoff: time.Second})
		defer set.Close(context.Background())
		for range 5 {
			time.Sleep(time.Hour) // the bubble's clock: instant
			died := time.Now()
			m.kill(t)
			next(t, status, StateRestarting)
			next(t, status, StateReady)
			m.mu.Lock()
			last := m.dials[len(m.dials)-1]
			m.mu.Unlock()
			if got := last.Sub(died); got != time.Second {
				t.Fatalf("restarted %v after the death, want 1s", got)
			}
		}
	})
}
