package e2e

// Benchmarks of the ACP door through the built binary:
//
//	go test -run XXX -bench ACP -benchtime 20x ./e2e/
//
// BenchmarkACPStartInitialize reports ms/op from spawning `dsh acp` to its
// initialize response (ns/op also includes closing stdin and reaping the
// process). BenchmarkACPPromptRoundTrip reports ms/op for session/new plus
// one prompt answered by the fake DeepSeek server, up to its stopReason,
// on one long-lived `dsh acp`.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// acpBenchEnv is an isolated cwd and environment for a benchmark.
func acpBenchEnv(b *testing.B, extra ...string) (cwd string, env []string) {
	b.Helper()
	base := b.TempDir()
	cwd = filepath.Join(base, "ws")
	home := filepath.Join(base, "home")
	for _, d := range []string{cwd, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	if r, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = r
	}
	env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".state"),
		"DSH_SESSION_ROOT=" + filepath.Join(base, "sessions"),
		"TMPDIR=" + os.TempDir(),
	}
	return cwd, append(env, extra...)
}

// acpBenchProc is a minimal synchronous ACP client of one `dsh acp`.
type acpBenchProc struct {
	b     *testing.B
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	id    int
}

func startACPBench(b *testing.B, cwd string, env []string) *acpBenchProc {
	b.Helper()
	cmd := exec.Command(dshBin, "acp")
	cmd.Dir, cmd.Env, cmd.Stderr = cwd, env, os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return &acpBenchProc{b: b, cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20)}
}

// call sends a request and reads lines until its response (notifications
// are skipped), which it returns decoded.
func (p *acpBenchProc) call(method string, params any) acpFrame {
	p.b.Helper()
	p.id++
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.id, "method": method, "params": params})
	if err != nil {
		p.b.Fatal(err)
	}
	if _, err := p.stdin.Write(append(req, '\n')); err != nil {
		p.b.Fatalf("%s: %v", method, err)
	}
	want := fmt.Sprint(p.id)
	for {
		line, err := p.out.ReadBytes('\n')
		if err != nil {
			p.b.Fatalf("%s: reading: %v", method, err)
		}
		var f acpFrame
		if err := json.Unmarshal(line, &f); err != nil {
			p.b.Fatalf("%s: not JSON: %q", method, acpShort(string(line), 200))
		}
		if f.isResponse() && string(f.ID) == want {
			if f.Error != nil {
				p.b.Fatalf("%s: %s", method, line)
			}
			f.Raw = string(line)
			return f
		}
	}
}

// close ends the process by closing stdin and reaps it.
func (p *acpBenchProc) close() {
	p.b.Helper()
	_ = p.stdin.Close()
	_, _ = io.Copy(io.Discard, p.out)
	if err := p.cmd.Wait(); err != nil {
		p.b.Fatalf("dsh acp: %v", err)
	}
}

var acpBenchInit = map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}

func BenchmarkACPStartInitialize(b *testing.B) {
	srv := modeltest.New(b)
	cwd, env := acpBenchEnv(b, srv.Env()...)
	var initTotal time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		p := startACPBench(b, cwd, env)
		p.call("initialize", acpBenchInit)
		initTotal += time.Since(t0)
		p.close()
	}
	b.StopTimer()
	b.ReportMetric(float64(initTotal.Microseconds())/1000/float64(b.N), "ms/op")
}

func BenchmarkACPPromptRoundTrip(b *testing.B) {
	srv := modeltest.New(b)
	srv.Handle(func(*modeltest.Request) modeltest.Reply { return modeltest.TextReply("done") })
	cwd, env := acpBenchEnv(b, srv.Env()...)
	p := startACPBench(b, cwd, env)
	defer p.close()
	p.call("initialize", acpBenchInit)
	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		ns := p.call("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})
		var r struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(ns.Result, &r); err != nil || r.SessionID == "" {
			b.Fatalf("session/new: %s", ns.Raw)
		}
		resp := p.call("session/prompt", textPrompt(r.SessionID, fmt.Sprintf("task %d", i)))
		if stop := resp.stopReason(); stop != "end_turn" {
			b.Fatalf("stopReason %q: %s", stop, strings.TrimSpace(resp.Raw))
		}
		total += time.Since(t0)
	}
	b.StopTimer()
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/op")
}
