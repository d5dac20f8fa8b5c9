package protocol

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
)

func TestParseInitializeParams_Valid(t *testing.T) {
	p, err := ParseInitializeParams(json.RawMessage(`{"cwd":"/w","provider":"deepseek-official","model":"deepseek-flash",
		"maxTokens":1e3,"reasoningEffort":"max","capabilities":{"permissions":true},"clientInfo":{"name":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := InitializeParams{Cwd: "/w", Provider: "deepseek-official", Model: "deepseek-flash", MaxTokens: 1000,
		ReasoningEffort: "max", Capabilities: &ClientCapabilities{Permissions: true}}
	if p.Cwd != want.Cwd || p.Provider != want.Provider || p.Model != want.Model || p.MaxTokens != want.MaxTokens ||
		p.ReasoningEffort != want.ReasoningEffort || p.Capabilities == nil || !p.Capabilities.Permissions {
		t.Fatalf("got %+v", p)
	}
	p, err = ParseInitializeParams(json.RawMessage(`{}`))
	if err != nil || !reflect.DeepEqual(p, InitializeParams{}) {
		t.Fatalf("empty: %+v %v", p, err)
	}
	for _, ok := range []string{`5`, `5.0`, `9007199254740991`, `1E2`} {
		if p, err := ParseInitializeParams(json.RawMessage(`{"maxTokens":` + ok + `}`)); err != nil || p.MaxTokens <= 0 {
			t.Errorf("maxTokens %s: %+v %v", ok, p, err)
		}
	}
}

func TestParseInitializeParams_OriginalMessages(t *testing.T) {
	for _, bad := range []string{`0`, `-1`, `1.5`, `9007199254740992`, `"10"`, `null`, `true`, `[]`, `{}`, `1e400`, `-0`} {
		_, err := ParseInitializeParams(json.RawMessage(`{"maxTokens":` + bad + `}`))
		if err == nil || err.Error() != "initialize maxTokens must be a positive safe integer" {
			t.Errorf("maxTokens %s: %v", bad, err)
		}
	}
	for _, bad := range []string{`""`, `null`, `5`, `{}`, `["high"]`} {
		_, err := ParseInitializeParams(json.RawMessage(`{"reasoningEffort":` + bad + `,"maxTokens":0}`))
		if !errors.Is(err, ErrInvalidReasoningEffort) || err.Error() != "initialize reasoningEffort must be a non-empty string" {
			t.Errorf("reasoningEffort %s: %v (checked before maxTokens)", bad, err)
		}
	}
}

func TestParseInitializeParams_ClearTypeErrors(t *testing.T) {
	for in, want := range map[string]string{
		`[]`:                                   "initialize params must be a JSON object",
		`{"cwd":5}`:                            "initialize cwd must be a string",
		`{"provider":{}}`:                      "initialize provider must be a string",
		`{"model":true}`:                       "initialize model must be a string",
		`{"capabilities":[]}`:                  "initialize capabilities must be an object",
		`{"capabilities":{"permissions":"y"}}`: "initialize capabilities.permissions must be a boolean",
	} {
		if _, err := ParseInitializeParams(json.RawMessage(in)); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

func TestInitializeParams_WireShape(t *testing.T) {
	b, _ := json.Marshal(InitializeParams{Cwd: "/w", Provider: "p", Model: "m"})
	if string(b) != `{"cwd":"/w","provider":"p","model":"m"}` {
		t.Fatalf("%s", b)
	}
}

func TestInitializeResult_OriginalShapePlusOurs(t *testing.T) {
	b, _ := json.Marshal(InitializeResult{ServerInfo: ServerInfo{Name: ServerName, Version: "0.0.1"}})
	if string(b) != `{"serverInfo":{"name":"deepseek-harness-sdk-runtime","version":"0.0.1"}}` {
		t.Fatalf("%s", b)
	}
	b, _ = json.Marshal(InitializeResult{ServerInfo: ServerInfo{Name: ServerName, Version: "1"}, ProtocolVersion: ProtocolVersion,
		Capabilities: &ServerCapabilities{Cancel: true, Close: true}})
	if string(b) != `{"serverInfo":{"name":"deepseek-harness-sdk-runtime","version":"1"},"protocolVersion":1,"capabilities":{"cancel":true,"close":true,"permissions":false,"compact":false,"rewind":false,"commands":false}}` {
		t.Fatalf("%s", b)
	}
}

func TestSubagentFinished_LastAssistantMessageOmittedWhenEmpty(t *testing.T) {
	p := SubagentFinishedParams{Provider: "local", AgentID: "c", ParentSessionID: "p", ChildSessionID: "c", Status: SubagentOK, StopReason: "completed"}
	b, _ := json.Marshal(p)
	if strings.Contains(string(b), "lastAssistantMessage") {
		t.Fatalf("%s", b)
	}
	p.LastAssistantMessage = []event.ContentBlock{}
	if b, _ = json.Marshal(p); strings.Contains(string(b), "lastAssistantMessage") {
		t.Fatalf("never []: %s", b)
	}
	p.LastAssistantMessage = []event.ContentBlock{event.Text("hi")}
	if b, _ = json.Marshal(p); !strings.Contains(string(b), `"lastAssistantMessage":[{"type":"text","text":"hi"}]`) {
		t.Fatalf("%s", b)
	}
}

func TestErrorMessages(t *testing.T) {
	for got, want := range map[string]string{
		NoAdapterError("acme").Error():          `no adapter registered for provider "acme"`,
		DisposedOutsideError("s1").Error():      `session agent was disposed outside the server: s1`,
		UnknownMethodError("nope").Error():      `unknown DeepSeek Harness SDK runtime method: nope`,
		ModelUnavailableError("p", "m").Error(): `model unavailable: p/m`,
		ImageUnsupportedError("m").Error():      `Model "m" does not support image input; initialize the SDK with a model that accepts images.`,
		ErrShuttingDown.Error():                 `SDK server is shutting down`,
		ErrNotInitialized.Error():               `SDK server is not initialized`,
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if got := UnsupportedEffortError("p", "m", "x").Error(); !strings.HasSuffix(got, `does not support reasoning effort "x"`) {
		t.Errorf("got %q", got)
	}
}

func TestTeardown(t *testing.T) {
	a, b := errors.New("a"), errors.New("b")
	if Teardown(nil) != nil || Teardown([]error{nil}) != nil {
		t.Error("no failures")
	}
	if Teardown([]error{nil, a}) != a {
		t.Error("one failure is rethrown as is")
	}
	err := Teardown([]error{a, b})
	var te *TeardownError
	if !errors.As(err, &te) || err.Error() != "SDK server teardown failed" || !errors.Is(err, b) || te.Detail() != "a; b" {
		t.Errorf("aggregate: %v", err)
	}
}

func TestParseSessionPromptParams(t *testing.T) {
	p, err := ParseSessionPromptParams(json.RawMessage(`{"sessionId":"s","contentBlocks":[{"type":"text","text":"hi"}]}`))
	if err != nil || p.SessionID != "s" || len(p.ContentBlocks) != 1 {
		t.Fatalf("%+v %v", p, err)
	}
	for in, want := range map[string]string{
		`{"contentBlocks":[]}`:                     "session/prompt sessionId must be a non-empty string",
		`{"sessionId":"","contentBlocks":[]}`:      "session/prompt sessionId must be a non-empty string",
		`{"sessionId":5,"contentBlocks":[]}`:       "session/prompt sessionId must be a non-empty string",
		`{"sessionId":"s"}`:                        "session/prompt contentBlocks must be an array",
		`{"sessionId":"s","contentBlocks":"text"}`: "session/prompt contentBlocks must be an array",
		`{"sessionId":"s","contentBlocks":null}`:   "session/prompt contentBlocks must be an array",
	} {
		if _, err := ParseSessionPromptParams(json.RawMessage(in)); err == nil || err.Error() != want {
			t.Errorf("%s: %v", in, err)
		}
	}
	if _, err := ParseSessionIDParams(MethodSessionCancel, json.RawMessage(`{}`)); err == nil || err.Error() != "session/cancel sessionId must be a non-empty string" {
		t.Errorf("%v", err)
	}
	if id, err := ParseSessionIDParams(MethodSessionClose, json.RawMessage(`{"sessionId":"x"}`)); err != nil || id != "x" {
		t.Errorf("%q %v", id, err)
	}
}

func TestParsePromptBlocks(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	blocks := []json.RawMessage{
		TextBlock("look"),
		ImageBlock("image/png", png),
		json.RawMessage(`{"type":"image","attachment":{"attachmentId":"sha256:ab","mediaType":"image/png","bytes":4,"width":1,"height":1}}`),
	}
	got, err := ParsePromptBlocks(blocks)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Block.Text != "look" || got[1].Image == nil || string(got[1].Image.Data) != string(png) ||
		got[1].Image.MimeType != "image/png" || got[2].Block.Attachment == nil || got[2].Image != nil || !HasEncodedImage(got) {
		t.Fatalf("%+v", got)
	}
	enc := base64.StdEncoding.EncodeToString(png)
	for in, want := range map[string]string{
		`5`:                             "contentBlocks[0]: a content block must be an object with a string type",
		`{"text":"x"}`:                  "a content block must be an object with a string type",
		`{"type":"text"}`:               "a text block needs a string text",
		`{"type":"tool-call","id":"x"}`: `block type "tool-call" is not accepted in a prompt (text or image)`,
		`{"type":"image"}`:              "an image block needs either data and mimeType or an attachment",
		`{"type":"image","data":"` + enc + `","mimeType":"image/bmp"}`:                                                   `image mimeType "image/bmp" is not supported`,
		`{"type":"image","data":"` + enc + `"}`:                                                                          `image mimeType (missing) is not supported`,
		`{"type":"image","data":"","mimeType":"image/png"}`:                                                              "image data is empty",
		`{"type":"image","data":5,"mimeType":"image/png"}`:                                                               "image data must be a base64 string",
		`{"type":"image","data":"` + enc[:4] + `\n` + enc[4:] + `","mimeType":"image/png"}`:                              "image data must be canonical base64",
		`{"type":"image","data":"YWI","mimeType":"image/png"}`:                                                           "image data must be canonical base64",
		`{"type":"image","data":"` + base64.URLEncoding.EncodeToString([]byte{0xfb, 0xff}) + `","mimeType":"image/png"}`: "image data must be canonical base64",
	} {
		_, err := ParsePromptBlocks([]json.RawMessage{json.RawMessage(in)})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "session/prompt contentBlocks[0]: ") {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	// The whole batch is checked: a bad second block rejects the prompt.
	if _, err := ParsePromptBlocks([]json.RawMessage{TextBlock("ok"), json.RawMessage(`[]`)}); err == nil || !strings.Contains(err.Error(), "contentBlocks[1]") {
		t.Errorf("%v", err)
	}
}

func TestIsReceipt(t *testing.T) {
	ev := event.New(event.TypeInboxSpliced, event.InboxSpliced{Target: "next-turn", Inserted: []event.Message{{ID: "m1", Role: "user"}}})
	if !IsReceipt(ev, "m1") || IsReceipt(ev, "m2") {
		t.Fatal("receipt")
	}
	one := 1
	claim := event.New(event.TypeInboxSpliced, event.InboxSpliced{Target: "next-turn", RemovedCount: &one, Inserted: []event.Message{}})
	if IsReceipt(claim, "m1") || IsReceipt(event.New(event.TypeTurnStart, event.TurnStart{Turn: 1}), "m1") {
		t.Fatal("not receipts")
	}
}

func TestPermissionRoundTrip(t *testing.T) {
	call := PermissionToolCall{CallID: "c", Tool: "bash", Kind: "execute", Command: "rm -rf build",
		Title: "Run rm", RawInput: json.RawMessage(`{"command":"rm -rf build"}`)}
	p := NewRequestPermissionParams("s", "/w", call)
	b, _ := json.Marshal(p)
	var back RequestPermissionParams
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.ToolCall; got.Command != call.Command || got.CallID != "c" || back.Workspace != "/w" || string(got.RawInput) != string(call.RawInput) {
		t.Fatalf("%+v", back)
	}
	if len(back.Options) != 4 || back.Options[0].OptionID != "allow_once" {
		t.Fatalf("options %+v", back.Options)
	}
	for _, a := range []string{OptionAllowOnce, OptionAllowAlways, OptionRejectOnce, OptionRejectAlways, Cancelled} {
		if got, err := Select(a).Answer(); err != nil || got != a {
			t.Errorf("%s → %s %v", a, got, err)
		}
	}
	if _, err := (RequestPermissionResult{Outcome: PermissionOutcome{Outcome: "selected", OptionID: "yes"}}).Answer(); err == nil {
		t.Error("unknown option accepted")
	}
	if _, err := (RequestPermissionResult{}).Answer(); err == nil {
		t.Error("empty outcome accepted")
	}
	b, _ = json.Marshal(Cancel())
	if string(b) != `{"outcome":{"outcome":"cancelled"}}` {
		t.Errorf("%s", b)
	}
}

func TestSessionEventParams_AppendJSONMatchesEncodingJSON(t *testing.T) {
	if n := reflect.TypeOf(event.Event{}).NumField(); n != 7 {
		t.Fatalf("event.Event has %d fields: update SessionEventParams.AppendJSON and this test", n)
	}
	full := event.New(event.TypeAssistantMessage, event.AssistantMessage{Turn: 1, Step: 2, Message: event.Message{ID: "m", Role: "assistant",
		Content: []event.ContentBlock{event.Text("<b>&\u2028é")}}})
	full.Seq, full.SourceEventSeqs, full.Ignorable = 41, []int64{3, 4}, true
	cases := []SessionEventParams{
		{SessionID: "s-1", Event: full},
		{SessionID: "a<b>&\"c\"\n\u2028é\xff", Event: event.Event{Type: "x/<y>", Seq: 0, Time: -1}},
		{SessionID: "s", Event: event.Event{Type: "t", Data: json.RawMessage(` {"a": 1} `)}},
		{SessionID: "s", Event: event.Event{Type: "t", Data: json.RawMessage("{\"a\":\n1}"), SurfaceOp: json.RawMessage(`{"op":"replace","start":1,"end":2}`)}},
		{SessionID: "s", Event: event.Event{Type: "t", Data: json.RawMessage(`"<html>"`)}},
	}
	for i, p := range cases {
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.AppendJSON([]byte("prefix:"))
		if err != nil || !strings.HasPrefix(string(got), "prefix:") || strings.ContainsAny(string(got), "\n\r") {
			t.Fatalf("case %d: %s %v", i, got, err)
		}
		got = got[len("prefix:"):]
		if i < 2 && string(got) != string(want) { // compact data: byte-identical
			t.Errorf("case %d:\n got %s\nwant %s", i, got, want)
		}
		var a, b any
		if json.Unmarshal(got, &a) != nil || json.Unmarshal(want, &b) != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("case %d: not equivalent:\n got %s\nwant %s", i, got, want)
		}
	}
	// Data validity is checked once, where events enter the runtime
	// (event.Validate on Session.Record; New marshals), not per encoding.
	if (event.Event{Type: "t", Data: json.RawMessage(`{bad`)}).Validate() == nil {
		t.Error("invalid data accepted")
	}
}
