package e2e

import (
	"strings"
	"testing"
)

// TestACPPipedOneShotGetsAnswers: a client that writes its requests and
// closes its input at once (printf '...' | dsh acp) still gets the answers
// to the requests dsh had read; teardown waits for them.
func TestACPPipedOneShotGetsAnswers(t *testing.T) {
	w := newWorld(t)
	w.Env = append(w.Env, w.scriptEnv(`{"steps":[{"text":"hi"}],"repeat":"last"}`)...)
	in := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"` + w.Cwd + `","mcpServers":[]}}` + "\n"
	for i := 0; i < 5; i++ {
		r := w.run(strings.NewReader(in), "acp")
		if r.Code != 0 {
			t.Fatalf("exit %d: %s", r.Code, r.Stderr)
		}
		if !strings.Contains(r.Stdout, `"id":0,"result"`) || !strings.Contains(r.Stdout, `"id":1,"result"`) ||
			!strings.Contains(r.Stdout, `"sessionId"`) {
			t.Fatalf("run %d: answers missing from stdout:\n%s", i, r.Stdout)
		}
	}
}
