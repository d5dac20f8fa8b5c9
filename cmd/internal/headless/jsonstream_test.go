package headless

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dsh-dev/dsh/core/event"
)

// lineWriter records every Write so tests can check one Write per line.
type lineWriter struct{ writes []string }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func i64(v int64) *int64 { return &v }

func decodeLine(t *testing.T, line string) map[string]any {
	t.Helper()
	if !strings.HasSuffix(line, "\n") || strings.Count(line, "\n") != 1 {
		t.Fatalf("line is not exactly one newline-terminated line: %.200q", line)
	}
	if !utf8.ValidString(line) {
		t.Fatalf("line is not valid UTF-8: %.200q", line)
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("line is not JSON: %v: %.200q", err, line)
	}
	return m
}

func toolCallEvent(callID, name, args string) event.Event {
	return event.New(event.TypeToolCall, event.ToolCall{Turn: 1, Step: 1, CallID: callID, Name: name, Arguments: args})
}

func toolResultEvent(callID, text string, isError bool) event.Event {
	return event.New(event.TypeToolResult, event.ToolResult{Turn: 1, Step: 1, Message: event.Message{
		ID: "m-" + callID, Role: "tool",
		Content: []event.ContentBlock{{Type: event.BlockToolResult, ToolCallID: callID, IsError: isError,
			Content: []event.ContentBlock{event.Text(text)}}},
		Source: event.Source{Kind: "tool", CallID: callID},
	}})
}

// project runs fn against a fresh projector and returns the written lines.
func project(t *testing.T, fn func(p *Projector) error) []string {
	t.Helper()
	w := &lineWriter{}
	if err := fn(NewProjector(w)); err != nil {
		t.Fatal(err)
	}
	return w.writes
}

func projectEvents(t *testing.T, evs ...event.Event) []string {
	t.Helper()
	return project(t, func(p *Projector) error {
		for _, ev := range evs {
			if err := p.Event(ev); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestTurnWithReasoningAndToolCall(t *testing.T) {
	usage := &event.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: i64(3)}
	evs := []event.Event{
		event.New(event.TypeUserMessage, event.Message{ID: "u1", Role: "user", Content: []event.ContentBlock{event.Text("hi")}, Source: event.Source{Kind: "user"}}),
		event.New(event.TypeTurnStart, event.TurnStart{Turn: 1}),
		event.New(event.TypeRequestContext, event.RequestContext{Provider: "p", Model: "m"}),
		event.New(event.TypeStepStart, event.Step{Turn: 1, Step: 1}),
		event.New(event.TypeAssistantAttempt, event.AssistantAttempt{Turn: 1, Step: 1, Attempt: 1,
			Error: &event.ErrorInfo{Code: "SERVER", Message: "boom"}, Usage: &event.Usage{InputTokens: 1, OutputTokens: 1, CacheReadTokens: i64(1)}}),
		event.New(event.TypeAssistantMessage, event.AssistantMessage{Turn: 1, Step: 1, Usage: usage, Message: event.Message{
			ID: "a1", Role: "assistant", Source: event.Source{Kind: "model"},
			Content: []event.ContentBlock{
				event.Reasoning("let me look"),
				event.Text("Listing <files> & more"),
				{Type: event.BlockToolCall, ID: "c1", Name: "bash", Arguments: `{"command":"ls","description":"list"}`},
			},
		}}),
		toolCallEvent("c1", "bash", `{"command":"ls","description":"list"}`),
		event.New(event.TypePermissionDecision, event.PermissionDecision{CallID: "c1", Tool: "bash", Decision: "allow", By: "mode"}),
		toolResultEvent("c1", "a\nb\n[exit code: 0]", false),
		event.New(event.TypeStepEnd, event.Step{Turn: 1, Step: 1}),
		event.New(event.TypeTurnEnd, event.TurnEnd{Turn: 1, Reason: event.TurnEndReason{Kind: event.ReasonCompleted}}),
		event.New(event.TypeSessionTitle, event.SessionTitle{Title: "t"}),
	}
	lines := project(t, func(p *Projector) error {
		if err := p.Session("session-1", "/w"); err != nil {
			return err
		}
		for _, ev := range evs {
			if err := p.Event(ev); err != nil {
				return err
			}
		}
		return p.Final("done")
	})
	want := []string{
		`{"type":"session","sessionId":"session-1","cwd":"/w"}`,
		`{"type":"status","phase":"turn_start","turn":1}`,
		`{"type":"status","phase":"step_start","turn":1,"step":1}`,
		`{"type":"thinking","text":"let me look"}`,
		`{"type":"text","text":"Listing <files> & more"}`,
		`{"type":"tool_call","callId":"c1","tool":"bash","input":{"command":"ls","description":"list"}}`,
		`{"type":"tool_result","callId":"c1","status":"completed","result":"a\nb\n[exit code: 0]"}`,
		`{"type":"status","phase":"step_end","turn":1,"step":1,"usage":{"inputTokens":11,"outputTokens":6,"cacheReadTokens":4}}`,
		`{"type":"status","phase":"turn_end","turn":1,"reason":{"kind":"completed"}}`,
		`{"type":"final","text":"done"}`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), strings.Join(lines, ""))
	}
	var types []string
	for i, l := range lines {
		if l != want[i]+"\n" {
			t.Errorf("line %d:\n got %s want %s", i, l, want[i])
		}
		types = append(types, decodeLine(t, l)["type"].(string))
	}
	if got := strings.Join(types, ","); got != "session,status,status,thinking,text,tool_call,tool_result,status,status,final" {
		t.Errorf("type order %s", got)
	}
}

func TestErrorMessageBounded(t *testing.T) {
	msg := strings.Repeat("x", 9<<10)
	lines := project(t, func(p *Projector) error { return p.Error(msg) })
	m := decodeLine(t, lines[0])
	if got := m["message"].(string); len(got) != 8192 || got != msg[:8192] {
		t.Errorf("message length %d, want 8192", len(got))
	}
	if m["truncated"] != true || m["type"] != "error" {
		t.Errorf("got %v", m)
	}
	short := project(t, func(p *Projector) error { return p.Error("bad flag") })
	if short[0] != `{"type":"error","message":"bad flag"}`+"\n" {
		t.Errorf("got %s", short[0])
	}
	exact := project(t, func(p *Projector) error { return p.Error(msg[:8192]) })
	if _, ok := decodeLine(t, exact[0])["truncated"]; ok {
		t.Error("a message of exactly 8192 bytes is not cut")
	}
}

func TestHugeToolResultBounded(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	lines := projectEvents(t, toolResultEvent("c9", big, true))
	if len(lines[0]) > MaxLineBytes {
		t.Fatalf("line %d bytes", len(lines[0]))
	}
	m := decodeLine(t, lines[0])
	if m["callId"] != "c9" || m["status"] != "error" || m["truncated"] != true || len(m["result"].(string)) != 8192 {
		t.Errorf("got callId=%v status=%v truncated=%v len=%d", m["callId"], m["status"], m["truncated"], len(m["result"].(string)))
	}
}

func TestFinalUnbounded(t *testing.T) {
	big := strings.Repeat("é\"\n", 1<<18) // > 1 MB with escapes
	lines := project(t, func(p *Projector) error { return p.Final(big) })
	m := decodeLine(t, lines[0])
	if m["text"] != big {
		t.Error("final text not preserved")
	}
	if _, ok := m["truncated"]; ok {
		t.Error("final carries truncated")
	}
}

// depthOf walks nested single-element containers and returns how many
// containers there are and the innermost value.
func depthOf(v any) (int, any) {
	n := 0
	for {
		switch t := v.(type) {
		case []any:
			n++
			if len(t) == 0 {
				return n, nil
			}
			v = t[0]
		case map[string]any:
			n++
			v = t["k"]
		default:
			return n, v
		}
	}
}

func TestDeepNesting(t *testing.T) {
	for _, tc := range []struct {
		name  string
		depth int
		open  string
		close string
	}{
		{"arrays100", 100, "[", "]"},
		{"objects100", 100, `{"k":`, "}"},
		{"arrays63", 63, "[", "]"},
		{"arrays64", 64, "[", "]"},
		{"arrays1M", 1 << 20, "[", "]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := strings.Repeat(tc.open, tc.depth) + "1" + strings.Repeat(tc.close, tc.depth)
			lines := projectEvents(t, toolCallEvent("c", "t", args))
			m := decodeLine(t, lines[0])
			n, inner := depthOf(m["input"])
			if tc.depth <= 63 {
				// input sits at event depth 1; 63 containers end at depth 63.
				if n != tc.depth || inner != json.Number("1") || m["truncated"] != nil {
					t.Fatalf("depth %d inner %v truncated %v", n, inner, m["truncated"])
				}
				return
			}
			// The event object is depth 0, input depth 1, so containers at
			// event depths 1..63 survive and the one at 64 becomes the marker.
			if n != MaxDepth-1 || inner != DepthMarker || m["truncated"] != true {
				t.Fatalf("depth %d inner %v truncated %v", n, inner, m["truncated"])
			}
		})
	}
}

func TestDeepNestingInvalidStaysRaw(t *testing.T) {
	args := strings.Repeat("[", 200) + strings.Repeat("]", 199)
	m := decodeLine(t, projectEvents(t, toolCallEvent("c", "t", args))[0])
	if m["input"] != args {
		t.Errorf("unbalanced deep input should stay raw, got %v", m["input"])
	}
}

func TestLongKeys(t *testing.T) {
	k1 := strings.Repeat("k", 9000)
	k2 := strings.Repeat("k", 8192) + "other"
	args := `{"` + k1 + `":1,"short":2,"` + k2 + `":3}`
	line := projectEvents(t, toolCallEvent("c", "t", args))[0]
	m := decodeLine(t, line)
	in := m["input"].(map[string]any)
	cut := strings.Repeat("k", 8192)
	if len(in) != 2 || in[cut] != json.Number("3") || in["short"] != json.Number("2") || m["truncated"] != true {
		t.Errorf("got %d keys truncated=%v", len(in), m["truncated"])
	}
	// The colliding key keeps the first position.
	if strings.Index(line, `"short"`) < strings.Index(line, `"kkk`) {
		t.Error("collided key moved")
	}
}

func TestUTF8Cut(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want int // bytes kept
	}{
		{"euro", strings.Repeat("€", 3000), 8190},                // 3-byte runes: 8192 splits the 2731st
		{"emoji", "a" + strings.Repeat("😀", 3000), 8189},         // 4-byte runes after one ASCII byte
		{"twoByte", strings.Repeat("é", 5000), 8192},             // boundary falls exactly
		{"invalid", strings.Repeat("\xff", 9000), 8190},          // each bad byte -> U+FFFD (3 bytes)... collapsed
		{"mixedInvalid", "ok\xc3" + strings.Repeat("z", 10), 15}, // short: replaced, not cut
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := project(t, func(p *Projector) error { return p.Error(tc.in) })[0]
			m := decodeLine(t, line)
			got := m["message"].(string)
			if !utf8.ValidString(got) {
				t.Fatal("invalid UTF-8")
			}
			if tc.name == "invalid" {
				// A run of invalid bytes collapses to one U+FFFD.
				if got != "\uFFFD" {
					t.Fatalf("got %q", got)
				}
				return
			}
			if len(got) != tc.want {
				t.Fatalf("kept %d bytes, want %d", len(got), tc.want)
			}
			if tc.want < len(tc.in) && m["truncated"] != true {
				t.Error("missing truncated")
			}
		})
	}
}

func TestToolInput(t *testing.T) {
	for _, tc := range []struct {
		name, args, want string
	}{
		{"empty", ``, `{}`},
		{"object", `{"a":1,"b":[true,null,"x"]}`, `{"a":1,"b":[true,null,"x"]}`},
		{"keyOrderKept", `{"z":1,"a":2,"m":3}`, `{"z":1,"a":2,"m":3}`},
		{"whitespace", " \n{\"a\" : 1}\t", `{"a":1}`},
		{"overflow", `1e400`, `"1e400"`},
		{"overflowNested", `{"a":[1,-1e400]}`, `"{\"a\":[1,-1e400]}"`},
		{"overflowTooDeep", strings.Repeat("[", 70) + "1e999" + strings.Repeat("]", 70), `"` + strings.Repeat("[", 70) + "1e999" + strings.Repeat("]", 70) + `"`},
		{"underflowVerbatim", `{"a":1e-400}`, `{"a":1e-400}`},
		{"bigInt", `{"n":123456789012345678901234567890}`, `{"n":123456789012345678901234567890}`},
		{"invalid", `{"a":`, `"{\"a\":"`},
		{"notJSON", `ls -la`, `"ls -la"`},
		{"blank", `   `, `"   "`},
		{"trailing", `{} {}`, `"{} {}"`},
		{"trailingGarbage", `{}x`, `"{}x"`},
		{"proto", `{"__proto__":{"polluted":true},"a":1}`, `{"__proto__":{"polluted":true},"a":1}`},
		{"duplicate", `{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`},
		{"array", `[1,2]`, `[1,2]`},
		{"string", `"hi"`, `"hi"`},
		{"emptyContainers", `{"a":{},"b":[]}`, `{"a":{},"b":[]}`},
		{"escapes", `{"s":"\u003c\u0001\ud83d\ude00"}`, `{"s":"<\u0001😀"}`},
		{"manyKeys", `{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k3":33}`,
			`{"k0":0,"k1":1,"k2":2,"k3":33,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := projectEvents(t, toolCallEvent("c", "t", tc.args))[0]
			decodeLine(t, line)
			want := `{"type":"tool_call","callId":"c","tool":"t","input":` + tc.want + "}\n"
			if line != want {
				t.Errorf("\n got %s want %s", line, want)
			}
		})
	}
}

func TestStepUsage(t *testing.T) {
	full := func(in, out int64) *event.Usage { return &event.Usage{InputTokens: in, OutputTokens: out} }
	withAll := func(in int64) *event.Usage {
		return &event.Usage{InputTokens: in, OutputTokens: 1, TotalTokens: i64(in + 1), CacheReadTokens: i64(2),
			CacheWriteTokens: i64(3), ReasoningTokens: i64(4)}
	}
	attempt := func(step int, u *event.Usage) event.Event {
		return event.New(event.TypeAssistantAttempt, event.AssistantAttempt{Turn: 1, Step: step, Attempt: 1, Usage: u})
	}
	message := func(step int, u *event.Usage) event.Event {
		return event.New(event.TypeAssistantMessage, event.AssistantMessage{Turn: 1, Step: step, Usage: u,
			Message: event.Message{ID: "a", Role: "assistant", Content: []event.ContentBlock{}}})
	}
	for _, tc := range []struct {
		name string
		evs  []event.Event
		want string // usage JSON, "" for absent
	}{
		{"messageOnly", []event.Event{message(1, full(7, 3))}, `{"inputTokens":7,"outputTokens":3}`},
		{"attemptPlusMessage", []event.Event{attempt(1, full(1, 2)), message(1, full(7, 3))}, `{"inputTokens":8,"outputTokens":5}`},
		{"attemptWithoutUsage", []event.Event{attempt(1, nil), message(1, full(7, 3))}, ``},
		{"messageWithoutUsage", []event.Event{attempt(1, full(1, 1)), message(1, nil)}, ``},
		{"noSamples", nil, ``},
		{"allBuckets", []event.Event{attempt(1, withAll(1)), message(1, withAll(10))},
			`{"inputTokens":11,"outputTokens":2,"totalTokens":13,"cacheReadTokens":4,"cacheWriteTokens":6,"reasoningTokens":8}`},
		{"bucketsOnlyIfAll", []event.Event{attempt(1, withAll(1)), message(1, full(10, 1))}, `{"inputTokens":11,"outputTokens":2}`},
		{"otherStepIgnored", []event.Event{attempt(2, nil), message(1, full(7, 3))}, `{"inputTokens":7,"outputTokens":3}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := append([]event.Event{event.New(event.TypeStepStart, event.Step{Turn: 1, Step: 1})}, tc.evs...)
			evs = append(evs, event.New(event.TypeStepEnd, event.Step{Turn: 1, Step: 1}))
			lines := projectEvents(t, evs...)
			last := lines[len(lines)-1]
			want := `{"type":"status","phase":"step_end","turn":1,"step":1}` + "\n"
			if tc.want != "" {
				want = `{"type":"status","phase":"step_end","turn":1,"step":1,"usage":` + tc.want + "}\n"
			}
			if last != want {
				t.Errorf("\n got %s want %s", last, want)
			}
		})
	}
}

func TestStepUsageResetsBetweenSteps(t *testing.T) {
	msg := event.New(event.TypeAssistantMessage, event.AssistantMessage{Turn: 1, Step: 1, Usage: &event.Usage{InputTokens: 5},
		Message: event.Message{ID: "a", Role: "assistant"}})
	lines := projectEvents(t,
		event.New(event.TypeStepStart, event.Step{Turn: 1, Step: 1}), msg, event.New(event.TypeStepEnd, event.Step{Turn: 1, Step: 1}),
		event.New(event.TypeStepStart, event.Step{Turn: 1, Step: 1}), msg, event.New(event.TypeStepEnd, event.Step{Turn: 1, Step: 1}),
	)
	for _, i := range []int{1, 3} {
		if !strings.Contains(lines[i], `"usage":{"inputTokens":5,"outputTokens":0}`) {
			t.Errorf("line %d: %s", i, lines[i])
		}
	}
}

func TestAssistantMessageBlocks(t *testing.T) {
	msg := event.New(event.TypeAssistantMessage, event.AssistantMessage{Turn: 1, Step: 1, Interrupted: true, Message: event.Message{
		ID: "a", Role: "assistant", Content: []event.ContentBlock{
			event.Reasoning(""), event.Text("one"), event.Reasoning("r2"), event.Text(""), event.Text(" "),
			{Type: event.BlockToolCall, ID: "c", Name: "x", Arguments: "{}"},
			{Type: event.BlockImage, Attachment: &event.Attachment{AttachmentID: "sha256:00"}},
			event.Text("two"),
		}}})
	got := strings.Join(projectEvents(t, msg), "")
	want := `{"type":"text","text":"one"}` + "\n" + `{"type":"thinking","text":"r2"}` + "\n" +
		`{"type":"text","text":" "}` + "\n" + `{"type":"text","text":"two"}` + "\n"
	if got != want {
		t.Errorf("\n got %s want %s", got, want)
	}
	replaced := msg
	replaced.SurfaceOp = json.RawMessage(`{"replace":[1,2]}`)
	if lines := projectEvents(t, replaced); len(lines) != 0 {
		t.Errorf("replacement projected: %v", lines)
	}
}

func TestToolResult(t *testing.T) {
	appendEv := toolResultEvent("c1", "out", false)
	replaced := appendEv
	replaced.SurfaceOp = json.RawMessage(`{"kind":"replace"}`)
	withErr := event.New(event.TypeToolResult, event.ToolResult{Turn: 1, Step: 1, Error: &event.ToolErrorInfo{Name: "x", Code: event.ToolPermissionDenied},
		Message: event.Message{ID: "m", Role: "tool", Content: []event.ContentBlock{{Type: event.BlockToolResult, ToolCallID: "c2",
			Content: []event.ContentBlock{event.Text("denied: "), {Type: event.BlockImage}, event.Text("no")}}}}})
	noSurface := appendEv
	noSurface.SurfaceOp = nil
	got := strings.Join(projectEvents(t, appendEv, replaced, withErr, noSurface), "")
	want := `{"type":"tool_result","callId":"c1","status":"completed","result":"out"}` + "\n" +
		`{"type":"tool_result","callId":"c2","status":"error","result":"denied: no"}` + "\n" +
		`{"type":"tool_result","callId":"c1","status":"completed","result":"out"}` + "\n"
	if got != want {
		t.Errorf("\n got %s want %s", got, want)
	}
}

func TestTurnEndReasonAsRecorded(t *testing.T) {
	ev := event.New(event.TypeTurnEnd, event.TurnEnd{Turn: 3, Reason: event.TurnEndReason{Kind: event.ReasonError,
		Error: &event.ErrorInfo{Message: "rate limited", Code: "RATE_LIMIT", Status: 429}}})
	got := projectEvents(t, ev)[0]
	want := `{"type":"status","phase":"turn_end","turn":3,"reason":{"kind":"error","error":{"message":"rate limited","code":"RATE_LIMIT","status":429}}}` + "\n"
	if got != want {
		t.Errorf("\n got %s want %s", got, want)
	}
	// A field this build does not know is still projected.
	ev.Data = json.RawMessage(`{"turn":2,"reason":{"kind":"aborted","reason":{"kind":"user"},"future":[1]}}`)
	got = projectEvents(t, ev)[0]
	want = `{"type":"status","phase":"turn_end","turn":2,"reason":{"kind":"aborted","reason":{"kind":"user"},"future":[1]}}` + "\n"
	if got != want {
		t.Errorf("\n got %s want %s", got, want)
	}
	// Another writer's number that overflows float64 is still valid JSON
	// text and is kept verbatim rather than failing the event.
	ev.Data = json.RawMessage(`{"turn":2,"reason":{"kind":"error","n":1e400}}`)
	got = projectEvents(t, ev)[0]
	want = `{"type":"status","phase":"turn_end","turn":2,"reason":{"kind":"error","n":1e400}}` + "\n"
	if got != want {
		t.Errorf("\n got %s want %s", got, want)
	}
}

func TestLineBound(t *testing.T) {
	part := strings.Repeat("v", 8<<10)
	args := `{"a":"` + part + `","b":"` + part + `","c":"` + part + `","d":"` + part + `","e":"` + part + `"}`
	got := projectEvents(t, toolCallEvent("c1", "write", args))[0]
	if want := `{"type":"tool_call","callId":"c1","tool":"write","truncated":true}` + "\n"; got != want {
		t.Errorf("scalars fallback:\n got %.300s", got)
	}
	// Control characters escape to 6 bytes each: even the scalar fallback
	// overflows, so only type and truncated remain.
	got = projectEvents(t, toolResultEvent("c2", strings.Repeat("\x01", 8<<10), false))[0]
	if want := `{"type":"tool_result","truncated":true}` + "\n"; got != want {
		t.Errorf("type-only fallback:\n got %.300s", got)
	}
	// An escaped string just under the bound stays whole.
	s := strings.Repeat("\x01", 5000) // 30000 bytes escaped
	m := decodeLine(t, project(t, func(p *Projector) error { return p.Error(s) })[0])
	if m["message"] != s {
		t.Error("line under the bound was cut")
	}
}

type failWriter struct{}

func (failWriter) Write(p []byte) (int, error) { return 0, errors.New("pipe closed") }

func TestWriteErrorAndBadPayload(t *testing.T) {
	p := NewProjector(failWriter{})
	if err := p.Session("s", "/"); err == nil || !strings.Contains(err.Error(), "pipe closed") {
		t.Errorf("got %v", err)
	}
	p = NewProjector(&bytes.Buffer{})
	for _, typ := range []string{event.TypeTurnStart, event.TypeStepStart, event.TypeStepEnd, event.TypeTurnEnd,
		event.TypeAssistantMessage, event.TypeAssistantAttempt, event.TypeToolCall, event.TypeToolResult} {
		if err := p.Event(event.Event{Type: typ, Data: json.RawMessage(`[`)}); err == nil {
			t.Errorf("%s: malformed payload accepted", typ)
		}
	}
	if err := p.Event(event.Event{Type: event.TypeTurnEnd, Data: json.RawMessage(`{"turn":1,"reason":"x"}`)}); err != nil {
		t.Errorf("string reason: %v", err)
	}
	if err := p.Event(event.Event{Type: "some/unknown", Data: json.RawMessage(`[`)}); err != nil {
		t.Errorf("unknown type: %v", err)
	}
}

func TestSessionBounded(t *testing.T) {
	id := strings.Repeat("s", 9000)
	m := decodeLine(t, project(t, func(p *Projector) error { return p.Session(id, "/tmp") })[0])
	if len(m["sessionId"].(string)) != 8192 || m["truncated"] != true || m["cwd"] != "/tmp" {
		t.Errorf("got %v", m["truncated"])
	}
}

func BenchmarkToolCallProjection(b *testing.B) {
	ev := toolCallEvent("c1", "write", `{"file_path":"/tmp/x","content":"`+strings.Repeat("line\\n", 2000)+`"}`)
	p := NewProjector(&lineWriter{})
	for b.Loop() {
		if err := p.Event(ev); err != nil {
			b.Fatal(err)
		}
	}
}
