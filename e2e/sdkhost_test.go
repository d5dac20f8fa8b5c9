package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
