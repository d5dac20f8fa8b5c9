package e2e

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/sdkrpc/client"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// TestSDKHostExample runs examples/sdkhost against the built dsh, both ways
// it reads an answer (Run with live text, Prompt with the Events iterator),
// so the example keeps showing a working API.
func TestSDKHostExample(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sdkhost")
	if out, err := exec.Command("go", "build", "-o", bin, "../examples/sdkhost").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	w := newWorld(t)
	w.Env = append(w.Env, w.scriptEnv(`{"chunkRunes":3,"steps":[{"text":"hello there, host"}],"repeat":"last"}`)...)
	for _, mode := range []string{"-events=false", "-events=true"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, bin, "-dsh", dshBin, "-provider", "scripted", "-model", "m", "-cwd", w.Cwd, mode, "say hello")
		cmd.Env = w.Env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		if err != nil || strings.TrimSpace(string(out)) != "hello there, host" || !strings.Contains(stderr.String(), "turn ended: completed") {
			t.Fatalf("%s: %v\nstdout %q\nstderr %s", mode, err, out, stderr.String())
		}
	}
}

// TestSDKRunCancelledByContext: a Go host that cancels Run's ctx mid-answer
// cancels the turn in dsh: Run returns the ctx error once the turn has
// ended aborted, and the session log records it.
func TestSDKRunCancelledByContext(t *testing.T) {
	w := newWorld(t)
	w.Env = append(w.Env, w.scriptEnv(`{"steps":[{"text":"a slow answer that never finishes in time","chunkRunes":1,"deltaDelayMs":500}],"repeat":"last"}`)...)
	c, _, err := client.Start(sdkCtx(t), sdkConfig(w), protocol.InitializeParams{Cwd: w.Cwd, Provider: "scripted", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSDK(t, c) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := c.Session("sdk-cancel").Run(ctx, "go", client.OnText(func(string) { cancel() }))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	if res.FinishReason != client.FinishAborted {
		t.Fatalf("the turn ended %q, want aborted (events %d)", res.FinishReason, len(res.Events))
	}
	evs := pxRead(t, w, "sdk-cancel")
	if last := evs[len(evs)-1]; last.Type != event.TypeTurnEnd || !strings.Contains(string(last.Data), `"aborted"`) {
		t.Fatalf("log ends with %s %s", last.Type, last.Data)
	}
}
