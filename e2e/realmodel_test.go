package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// A DeepSeek model that writes its tool call as DSML text in its reply:
// dsh run runs the call and finishes with the real answer, exit 0; the
// markup is never the answer.
func TestHeadlessCallWrittenAsText(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	w := newWorld(t, srv.Env()...)
	srv.Enqueue(modeltest.TextReply("Writing the file.\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"write\">\n"+
		"<｜DSML｜parameter name=\"file_path\" string=\"true\">notes.txt</｜DSML｜parameter>\n"+
		"<｜DSML｜parameter name=\"content\" string=\"true\">from the markup\n</｜DSML｜parameter>\n"+
		"</｜DSML｜invoke>\n</｜DSML｜function_calls>"),
		modeltest.TextReply("Wrote notes.txt."))
	r := w.run(nil, "run", "--quiet", "--permission-mode", "full", "write notes.txt")
	wantExit(t, r, 0)
	if r.Stdout != "Wrote notes.txt.\n" {
		t.Errorf("stdout = %q", r.Stdout)
	}
	got, err := os.ReadFile(filepath.Join(w.Cwd, "notes.txt"))
	if err != nil || string(got) != "from the markup\n" {
		t.Fatalf("notes.txt = %q, %v", got, err)
	}
	if v := srv.Violations(); len(v) > 0 {
		t.Fatalf("violations: %v", v)
	}
}

// A server that counts max_tokens against its window, as DeepSeek does: a
// request asks for no more than the window leaves, and a refusal naming
// the completion's share is answered with a lower max_tokens at once.
func TestHeadlessMaxTokensFitTheWindow(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t, modeltest.WithContextLimit(200_000), modeltest.WithMaxTokensCounted())
	w := newWorld(t, append(srv.Env(), "DSH_CONTEXT_WINDOW=1000000")...)
	srv.Enqueue(modeltest.TextReply("fits"))
	r := w.run(nil, "run", "--quiet", "hello")
	wantExit(t, r, 0)
	reqs := srv.Requests()
	if len(reqs) != 2 || !reqs[0].Refused || reqs[1].Body.MaxTokens == nil ||
		int64(*reqs[1].Body.MaxTokens)+reqs[1].PromptTokens > 200_000 {
		t.Fatalf("%d requests; stdout %q stderr %s", len(reqs), r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "fits") {
		t.Fatalf("stdout %q", r.Stdout)
	}
}
