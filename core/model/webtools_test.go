package model

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// searchBlock is a stand-in for a result block of DeepSeek's web search:
// the Chat Completions shape is not documented in dsh's sources, so the
// client keeps any member it does not read, whatever its name. The bytes
// hold escapes and HTML characters that a re-encoding would change.
const searchBlock = `{"type":"web_search_call","id":"ws_1","action":{"type":"search","queries":["go 1.26 release <notes>"]},"results":[{"url":"https://go.dev/doc/go1.26?a=1&b=2","title":"Go 1.26 \u00e9"}]}`

// webToolsReply streams a reply whose deltas carry the block in an
// unknown member, split over two chunks, then text.
func webToolsReply() modeltest.Reply {
	chunk := func(delta string) string {
		return `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
	}
	return modeltest.NewStream().Role().
		Data(chunk(`{"web_search_blocks":[` + searchBlock + `]}`)).
		Data(chunk(`{"web_search_blocks":[{"type":"web_search_call","id":"ws_2","action":{"type":"open_page","url":"https://go.dev/blog"}}],"refusal":null}`)).
		Text("Go 1.26 is out.").Finish("stop").Usage(modeltest.DefaultUsage).Done().Reply()
}

func TestWebToolsDeclaredOnlyWhenOn(t *testing.T) {
	srv := modeltest.New(t, modeltest.WithoutChecks(modeltest.CheckStable)) // one conversation, two tool lists
	srv.Enqueue(modeltest.TextReply("a"), modeltest.TextReply("b"))
	for _, on := range []bool{false, true} {
		p := newClient(t, srv, Options{WebTools: on})
		if _, err := p.Stream(context.Background(), firstRequest(), nil); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	decl := `,{"type":"deepseek_web_search","name":"deepseek_web_search"},{"type":"deepseek_read_url","name":"deepseek_read_url"}]`
	if bytes.Contains(reqs[0].Raw, []byte("deepseek_web_search")) {
		t.Fatalf("declared while off: %s", reqs[0].Raw)
	}
	if !bytes.Contains(reqs[1].Raw, []byte(decl)) {
		t.Fatalf("not declared after the function tools: %s", reqs[1].Raw)
	}
	// An OpenAI-compatible endpoint declares them only when told to.
	for _, anyEndpoint := range []bool{false, true} {
		p, err := New(ProviderOpenAI, Options{BaseURL: srv.URL, APIKey: "k", WebTools: true, WebToolsAnyEndpoint: anyEndpoint})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.(*httpProvider).webTools; got != anyEndpoint {
			t.Fatalf("openai-compatible with any endpoint %v declares: %v", anyEndpoint, got)
		}
	}
}

func TestWebToolBlocksKeptAndSentBackUnchanged(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(webToolsReply(), modeltest.TextReply("ok"))
	p := newClient(t, srv, Options{WebTools: true})
	req := firstRequest()
	resp, err := p.Stream(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Go 1.26 is out." || len(resp.ServerFields) != 1 || resp.ServerFields[0].Name != "web_search_blocks" {
		t.Fatalf("response %+v", resp)
	}
	want := `[` + searchBlock + `,{"type":"web_search_call","id":"ws_2","action":{"type":"open_page","url":"https://go.dev/blog"}}]`
	if string(resp.ServerFields[0].Value) != want {
		t.Fatalf("kept %s\nwant %s", resp.ServerFields[0].Value, want)
	}
	req.Messages = append(req.Messages,
		Message{Role: "assistant", Content: resp.Text, Reasoning: resp.Reasoning, ServerFields: resp.ServerFields},
		Message{Role: "user", Content: "and?"})
	if _, err := p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	raw := srv.Requests()[1].Raw
	if !bytes.Contains(raw, []byte(`"content":"Go 1.26 is out.","reasoning_content":"","web_search_blocks":`+want+`}`)) {
		t.Fatalf("the blocks were not sent back byte for byte: %s", raw)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
}

func TestWebToolsOffIgnoresUnknownMembers(t *testing.T) {
	srv := modeltest.New(t)
	srv.Enqueue(webToolsReply())
	p := newClient(t, srv, Options{})
	resp, err := p.Stream(context.Background(), firstRequest(), nil)
	if err != nil || len(resp.ServerFields) != 0 || !strings.HasPrefix(resp.Text, "Go") {
		t.Fatalf("%+v %v", resp, err)
	}
}

func TestServerFieldMustBeJSON(t *testing.T) {
	req := firstRequest()
	req.Messages = append(req.Messages, Message{Role: "assistant", ServerFields: []ServerField{{Name: "x", Value: []byte("{bad")}}})
	if _, err := encodeBody(req, bodyPlan{dialect: dialectDeepSeek}); err == nil || !strings.Contains(err.Error(), "server field") {
		t.Fatalf("err %v", err)
	}
}
