package sdkrpc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core"
)

// A session whose log records additional workspace roots (an ACP client
// gave them) keeps them when the SDK door wakes it: in auto mode a write
// under one runs without asking the host.
func TestServer_ResumeKeepsRecordedRoots(t *testing.T) {
	extra := t.TempDir()
	if r, err := filepath.EvalSymlinks(extra); err == nil {
		extra = r
	}
	target := filepath.Join(extra, "x.txt")
	script := fmt.Sprintf(`{"steps":[{"toolCalls":[{"name":"write","arguments":{"file_path":%q,"content":"hi"}}]},{"text":"done"}]}`, target)
	p := newPeer(t, script)
	s, err := p.rt.Create(context.Background(), core.SessionOptions{ID: "roots", Cwd: p.cwd, AdditionalDirs: []string{extra}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.initialize(`,"capabilities":{"permissions":true}`)
	p.send(`{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":"roots","contentBlocks":[{"type":"text","text":"write it"}]}}`)
	f := p.next(func(f frame) bool {
		return f.Method == "session/request_permission" || f.Method == "session.status" && strings.Contains(f.raw, `"idle"`)
	})
	if f.Method == "session/request_permission" {
		t.Fatalf("the host was asked about a write under a recorded root: %s", f.raw)
	}
	if data, err := os.ReadFile(target); err != nil || string(data) != "hi" {
		t.Fatalf("write under the recorded root: %q %v", data, err)
	}
}
