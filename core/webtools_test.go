package core

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// webBlocks stands in for the result blocks of DeepSeek's server-side web
// tools in a reply (the Chat Completions member is not documented in dsh's
// sources; the client keeps any member it does not read).
const webBlocks = `[{"type":"web_search_call","id":"ws_1","action":{"type":"search","queries":["dsh release <notes>","go 1.26"]},"results":[{"url":"https://a.example/x?a=1&b=2"}]},{"type":"web_search_call","id":"ws_2","action":{"type":"open_page","url":"https://go.dev/blog"}}]`

func TestWebToolBlocksReplayedAndShown(t *testing.T) {
	srv := modeltest.New(t)
	chunk := `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"web_search_blocks":` + webBlocks + `}}]}`
	srv.Enqueue(
		modeltest.NewStream().Role().Reasoning("look it up").Data(chunk).Text("It is out.").
			Finish("stop").Usage(modeltest.DefaultUsage).Done().Reply(),
		modeltest.TextReply("second"),
		modeltest.TextReply("third"),
	)
	h := newHarness(t)
	newRT := func() *Runtime {
		return h.runtimeWith(func(c *Config) {
			c.Defaults = event.Config{Provider: model.ProviderDeepSeek, Model: "deepseek-flash"}
			c.NewProvider = func(name string) (model.Provider, error) {
				return model.New(name, model.Options{BaseURL: srv.URL, APIKey: "k", WebTools: true})
			}
		})
	}
	h.rt = newRT()
	s := h.session()
	if res := run(t, s, "what is new?"); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn 1: %+v", res.Reason)
	}
	_, evs, err := h.rt.Store().Read(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	var server *event.ContentBlock
	for _, ev := range evs {
		switch ev.Type {
		case event.TypeAssistantMessage:
			am, _ := event.Decode[event.AssistantMessage](ev)
			for i, b := range am.Message.Content {
				if b.Type == event.BlockServer {
					server = &am.Message.Content[i]
				}
			}
		case event.TypeToolCall:
			tc, _ := event.Decode[event.ToolCall](ev)
			titles = append(titles, tc.Facts.Kind+" "+tc.Facts.Title)
		}
	}
	if server == nil || server.Name != "web_search_blocks" || server.Text != webBlocks {
		t.Fatalf("server block %+v", server)
	}
	want := []string{"search Web search: dsh release <notes>; go 1.26", "fetch Read https://go.dev/blog"}
	if strings.Join(titles, "|") != strings.Join(want, "|") {
		t.Fatalf("calls shown %q, want %q", titles, want)
	}

	sent := `"web_search_blocks":` + webBlocks + `}`
	run(t, s, "thanks")
	if raw := srv.Requests()[1].Raw; !bytes.Contains(raw, []byte(sent)) {
		t.Fatalf("turn 2 does not send the blocks back unchanged: %s", raw)
	}
	// A resume in a new runtime sends them again (the fake server checks the
	// prefix stays byte-identical to turn 2's).
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	rt2 := newRT()
	s2, err := rt2.Resume(context.Background(), s.ID(), SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s2, "more")
	if raw := srv.Requests()[2].Raw; !bytes.Contains(raw, []byte(sent)) {
		t.Fatalf("the resumed session does not send the blocks back: %s", raw)
	}
	if bytes.Contains(srv.Requests()[2].Raw, []byte("Run by DeepSeek")) {
		t.Fatalf("the search calls reached the model's history: %s", srv.Requests()[2].Raw)
	}
}

// A checkpoint keeps a kept message's server blocks byte for byte through
// the log's JSON (which escapes <, > and & in strings).
func TestCheckpointKeepsServerFields(t *testing.T) {
	fields := []model.ServerField{{Name: "blocks", Value: []byte(`[{"q":"a <b> & c","u":"https://x/?a=1&b=2"}]`)}}
	cp := event.CompactionCheckpoint{History: []event.CheckpointMessage{
		{Kind: model.KindWork, Role: "assistant", Content: "x", ServerFields: checkpointServerFields(fields)}}}
	ev := event.New(event.TypeCompactionCheckpoint, cp)
	back, err := event.Decode[event.CompactionCheckpoint](ev)
	if err != nil {
		t.Fatal(err)
	}
	var c conversation
	c.restore(back.History)
	if len(c.msgs) != 1 || len(c.msgs[0].ServerFields) != 1 || !bytes.Equal(c.msgs[0].ServerFields[0].Value, fields[0].Value) {
		t.Fatalf("restored %+v", c.msgs)
	}
}
