package e2e

import (
	"testing"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// dsh run -c with --model / --max-tokens on the command line: the adopted
// session takes them (recorded as a session/config change, so the next
// wake keeps them), rather than the flags being ignored; without them the
// session keeps its recorded configuration.
func TestRunResumeTakesModelFlags(t *testing.T) {
	// A new model is a new system prompt (it names the model): the cached
	// prefix starts again, by design.
	srv := modeltest.New(t, modeltest.WithoutChecks(modeltest.CheckPrefix, modeltest.CheckStable))
	w := newWorld(t, srv.Env()...)
	srv.Enqueue(modeltest.TextReply("one"), modeltest.TextReply("two"), modeltest.TextReply("three"))
	wantExit(t, w.run(nil, "run", "--model", "deepseek-flash", "first"), 0)
	wantExit(t, w.run(nil, "run", "-c", "--model", "deepseek-v4-pro", "--max-tokens", "777", "second"), 0)
	wantExit(t, w.run(nil, "run", "-c", "third"), 0)
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	for i, want := range []struct {
		model string
		max   int
	}{{"deepseek-flash", 0}, {"deepseek-v4-pro", 777}, {"deepseek-v4-pro", 777}} {
		b := reqs[i].Body
		if b.Model != want.model || (want.max != 0 && (b.MaxTokens == nil || *b.MaxTokens != want.max)) {
			got := 0
			if b.MaxTokens != nil {
				got = *b.MaxTokens
			}
			t.Errorf("request %d: model %q max_tokens %d, want %q %d", i+1, b.Model, got, want.model, want.max)
		}
	}
}
