package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/mcp/mcptest"
	"github.com/dsh-dev/dsh/core/tool"
)

// proc is the server's current process.
func (h *harness) proc(name string) *stdioProc {
	h.t.Helper()
	for _, sv := range h.set.list() {
		if sv.cfg.Name == name {
			sv.mu.Lock()
			defer sv.mu.Unlock()
			return sv.proc
		}
	}
	h.t.Fatalf("no server %s", name)
	return nil
}

// kill SIGKILLs the server's process and waits until it is reaped.
func (h *harness) kill(name string) {
	h.t.Helper()
	p := h.proc(name)
	if err := p.p.Signal(syscall.SIGKILL); err != nil {
		h.t.Fatal(err)
	}
	<-p.exited
}

// toolBytes is the tool list as the model sees it.
func toolBytes(t *testing.T, s *Set) string {
	ts, _ := s.Tools()
	type spec struct {
		Name, Desc string
		Schema     json.RawMessage
	}
	var out []spec
	for _, x := range ts {
		out = append(out, spec{x.Name(), x.Description(), x.Schema()})
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A killed server is restarted: the next call works, the restart is
// reported, and the tool list stays byte-identical.
func TestAKilledServerIsRestartedWithTheSameTools(t *testing.T) {
	h := start(t, Options{}, stdioServer("t"))
	h.waitState("t", StateReady)
	before := toolBytes(t, h.set)
	old := h.proc("t")
	h.kill("t")
	if r := h.call(context.Background(), "mcp__t__echo", `{"text":"again"}`, nil); r.IsError || text(r) != "echo: again" {
		t.Fatalf("the call after the kill: %+v", r)
	}
	st := h.waitState("t", StateRestarting)
	if !strings.Contains(st.Error, "signal: killed") || st.Restarts != 0 {
		t.Errorf("the death's report: %+v", st)
	}
	if st := h.waitState("t", StateReady); st.Restarts != 1 || st.Tools != len(allTools) {
		t.Errorf("the restart's report: %+v", st)
	}
	if h.proc("t") == old {
		t.Error("no new process")
	}
	if after := toolBytes(t, h.set); after != before {
		t.Errorf("the tool list changed across the restart:\n%s\n%s", before, after)
	}
}

// A server that dies at every restart is given up after the bound: calls
// then fail at once saying why, and it is not started again.
func TestAServerThatDiesAtEveryRestartIsGivenUp(t *testing.T) {
	dir := t.TempDir()
	marker, starts := filepath.Join(dir, "dead"), filepath.Join(dir, "starts")
	h := start(t, Options{Restart: RestartPolicy{Backoff: time.Millisecond}},
		stdioServer("t", KV{Name: "MCPTEST_EXIT_IF", Value: marker}, KV{Name: "MCPTEST_START_LOG", Value: starts}))
	h.waitState("t", StateReady)
	echo := h.tool("mcp__t__echo")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.kill("t")
	restarting := 0
	var failed Status
	for failed.State != StateFailed {
		select {
		case st := <-h.status:
			if st.State == StateRestarting {
				restarting++
			}
			failed = st
		case <-time.After(15 * time.Second):
			t.Fatalf("never given up: %+v", h.set.Status())
		}
	}
	if restarting != 3 {
		t.Errorf("%d restart reports, want 3", restarting)
	}
	for _, want := range []string{"not restarted", "3 restarts", "exit status 5", "refusing to start (MCPTEST_EXIT_IF)"} {
		if !strings.Contains(failed.Error, want) {
			t.Errorf("the failure %q does not say %q", failed.Error, want)
		}
	}
	r := echo.Run(context.Background(), json.RawMessage(`{"text":"x"}`), nil)
	if !r.IsError || !strings.Contains(text(r), "not restarted") {
		t.Errorf("a call to the given-up server: %+v", r)
	}
	if ts, _ := h.set.Tools(); len(ts) != 0 {
		t.Errorf("a given-up server's tools must leave the list: %d", len(ts))
	}
	if b, _ := os.ReadFile(starts); strings.Count(string(b), "start") != 4 {
		t.Errorf("started %d times, want 1 + 3 restarts", strings.Count(string(b), "start"))
	}
}

// A call running when its server is killed ends at once with a tool
// error that says so; the server is restarted for the next one.
func TestACallInFlightWhenTheServerIsKilledIsAToolError(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "calls")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	h := start(t, Options{}, stdioServer("t", KV{Name: "MCPTEST_CALL_LOG", Value: fifo}))
	done := make(chan tool.Result, 1)
	go func() { done <- h.call(context.Background(), "mcp__t__block", `{}`, nil) }()
	if line := readFIFOLine(t, fifo); line != "block\n" {
		t.Fatalf("the server logged %q", line)
	}
	h.kill("t")
	select {
	case r := <-done:
		if !r.IsError || !strings.Contains(text(r), "stopped during the call to block") || !strings.Contains(text(r), "signal: killed") {
			t.Errorf("the call in flight: %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight did not end when its server was killed")
	}
	read := make(chan string, 1)
	go func() { read <- readFIFOLine(t, fifo) }()
	if r := h.call(context.Background(), "mcp__t__echo", `{"text":"back"}`, nil); r.IsError {
		t.Fatalf("after the restart: %q", text(r))
	}
	if line := <-read; line != "echo\n" {
		t.Errorf("the server logged %q", line)
	}
}

func readFIFOLine(t *testing.T, path string) string {
	f, err := os.Open(path) // blocks until the server opens it to write
	if err != nil {
		t.Error(err)
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	_, _ = io.Copy(io.Discard, f)
	return line
}

// Add starts the servers whose names are new and keeps the running ones.
func TestAddStartsOnlyNewServers(t *testing.T) {
	h := start(t, Options{}, stdioServer("a"))
	old := h.proc("a")
	added := h.set.Add([]ServerConfig{{Name: "a", Transport: TransportStdio, Command: "dsh-other"}, stdioServer("b")})
	if len(added) != 1 || added[0] != "b" {
		t.Fatalf("added %v", added)
	}
	h.waitState("b", StateReady)
	if h.proc("a") != old {
		t.Error("the running server of the same name was replaced")
	}
	if r := h.call(context.Background(), "mcp__b__echo", `{"text":"new"}`, nil); text(r) != "echo: new" {
		t.Fatalf("the added server: %+v", r)
	}
	if st := h.set.Status(); len(st) != 2 || st[0].State != StateReady || st[1].State != StateReady {
		t.Errorf("status %+v", st)
	}
}

// A streamable-HTTP server that dropped the session is reconnected, and
// the call that found the session gone is sent again on the new one.
func TestADroppedHTTPSessionIsReconnected(t *testing.T) {
	rs := mcptest.NewRestartable(mcptest.Options{})
	srv := httptest.NewServer(rs)
	t.Cleanup(srv.Close)
	t.Cleanup(rs.Close)
	h := start(t, Options{}, ServerConfig{Name: "web", Transport: TransportHTTP, URL: srv.URL})
	h.waitState("web", StateReady)
	before := toolBytes(t, h.set)
	if r := h.call(context.Background(), "mcp__web__echo", `{"text":"one"}`, nil); text(r) != "echo: one" {
		t.Fatalf("echo: %+v", r)
	}
	rs.Restart()
	if r := h.call(context.Background(), "mcp__web__echo", `{"text":"two"}`, nil); text(r) != "echo: two" {
		t.Fatalf("echo after the server lost the session: %+v", r)
	}
	if st := h.waitState("web", StateReady); st.Restarts != 1 {
		t.Errorf("the reconnect's report: %+v", st)
	}
	if after := toolBytes(t, h.set); after != before {
		t.Errorf("the tool list changed across the reconnect")
	}
}

// With restarts off (a negative Max: config mcpRestarts 0) a server that
// dies is failed at once, saying so, and started no more.
func TestRestartsOff(t *testing.T) {
	starts := filepath.Join(t.TempDir(), "starts")
	h := start(t, Options{Restart: RestartPolicy{Max: -1}}, stdioServer("t", KV{Name: "MCPTEST_START_LOG", Value: starts}))
	h.waitState("t", StateReady)
	echo := h.tool("mcp__t__echo")
	h.kill("t")
	st := h.waitState("t", StateFailed)
	if !strings.Contains(st.Error, "restarts are off") || st.Restarts != 0 {
		t.Fatalf("the death's report: %+v", st)
	}
	if r := echo.Run(context.Background(), json.RawMessage(`{"text":"x"}`), nil); !r.IsError || !strings.Contains(text(r), "not restarted") {
		t.Fatalf("a call after the death: %+v", r)
	}
	if b, _ := os.ReadFile(starts); strings.Count(string(b), "start") != 1 {
		t.Errorf("started %d times, want once", strings.Count(string(b), "start"))
	}
}
