package e2e

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// TestRunWebSearch drives `dsh run --web-search on` against the fake
// model: the request declares DeepSeek's server tools, the reply's result
// blocks (under a stand-in member: the Chat Completions name is not
// documented in dsh's sources) show as a search call, and the next run of
// the same session sends them back byte for byte. Off by default.
func TestRunWebSearch(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t, modeltest.WithoutChecks(modeltest.CheckStable)) // the last run turns the tools off
	w := newWorld(t, srv.Env()...)
	blocks := `[{"type":"web_search_call","id":"ws_1","action":{"type":"search","queries":["dsh changelog"]}}]`
	srv.Enqueue(
		modeltest.NewStream().Role().
			Data(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"search_blocks":`+blocks+`}}]}`).
			Text("Found it.").Finish("stop").Usage(modeltest.DefaultUsage).Done().Reply(),
		modeltest.TextReply("again"),
		modeltest.TextReply("plain"),
	)
	evs, r := runJSON(t, w, nil, "run", "--json", "--web-search", "on", "what changed?")
	wantExit(t, r, 0)
	id := checkRunStream(t, w, evs)
	if !strings.Contains(r.Stdout, `"tool":"deepseek_web_search","input":{"queries":["dsh changelog"]}`) {
		t.Fatalf("the search is not shown:\n%s", r.Stdout)
	}
	if !bytes.Contains(srv.Requests()[0].Raw, []byte(`{"type":"deepseek_web_search","name":"deepseek_web_search"}`)) {
		t.Fatalf("not declared: %s", srv.Requests()[0].Raw)
	}
	_, r = runJSON(t, w, nil, "run", "--json", "--web-search", "on", "--session-id", id, "and then?")
	wantExit(t, r, 0)
	if !bytes.Contains(srv.Requests()[1].Raw, []byte(`"search_blocks":`+blocks+`}`)) {
		t.Fatalf("the blocks were not sent back: %s", srv.Requests()[1].Raw)
	}
	// Off (the default): nothing declared. The stored blocks are still
	// part of the history and go back as recorded.
	_, r = runJSON(t, w, nil, "run", "--json", "--session-id", id, "plain")
	wantExit(t, r, 0)
	if bytes.Contains(srv.Requests()[2].Raw, []byte(`"name":"deepseek_web_search"`)) {
		t.Fatalf("declared while off: %s", srv.Requests()[2].Raw)
	}
}

// TestACPWebSearchShownAsToolCalls: over ACP, each search and page read the
// server ran is a tool_call of kind search or fetch, completed.
func TestACPWebSearchShownAsToolCalls(t *testing.T) {
	srv, w := newACPWorld(t)
	blocks := `[{"action":{"type":"search","queries":["acp web"]}},{"action":{"type":"open_page","url":"https://example.com/a"}}]`
	srv.Enqueue(modeltest.NewStream().Role().Reasoning("search").
		Data(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"search_blocks":` + blocks + `}}]}`).
		Text("Done.").Finish("stop").Usage(modeltest.DefaultUsage).Done().Reply())
	p := startACP(t, w, "--web-search", "on")
	p.initialize()
	sid := p.newSession()
	if stop := p.promptText(sid, "look it up"); stop != "end_turn" {
		t.Fatalf("stop %q", stop)
	}
	calls, done := map[string]string{}, map[string]bool{}
	for _, fr := range p.all() {
		u := fr.update()
		if u == nil {
			continue
		}
		id := fmt.Sprint(u["toolCallId"])
		switch u["sessionUpdate"] {
		case "tool_call":
			calls[id] = fmt.Sprint(u["kind"]) + " " + fmt.Sprint(u["title"])
		case "tool_call_update":
			done[id] = done[id] || u["status"] == "completed"
		}
	}
	var got []string
	for id, c := range calls {
		if !done[id] {
			t.Errorf("call %s (%s) never completed", id, c)
		}
		got = append(got, c)
	}
	sort.Strings(got)
	if want := "fetch Read https://example.com/a|search Web search: acp web"; strings.Join(got, "|") != want {
		t.Fatalf("tool calls %q, want %s", got, want)
	}
}
