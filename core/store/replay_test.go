package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
)

func TestReplayEqualsWritten(t *testing.T) {
	evs := sessionEvents(100)
	// An ignorable type we do not know is carried through; so is a payload
	// with characters JSON encoders like to rewrite.
	odd := event.Event{Type: "future/thing", Data: json.RawMessage(`{"x":"<&>\u2028"}`), Ignorable: true}
	title := event.New(event.TypeSessionTitle, event.SessionTitle{Title: "a <b> & c"})
	evs = append(evs, seqd(int64(len(evs)), odd, title)...)
	s, path := createWith(t, "replay", evs)

	h, got, err := s.Read("replay")
	if err != nil {
		t.Fatal(err)
	}
	if h.ID != "replay" || h.Type != "session" || h.Version != 0 || h.Cwd != "/work/project" || h.CreatedAt == "" {
		t.Errorf("header = %+v", h)
	}
	equalEvents(t, got, evs)
	if !bytes.Contains(readFile(t, path), []byte(`{"x":"<&>\u2028"}`)) {
		t.Error("payload bytes were HTML-escaped on disk")
	}

	l, got2, err := s.Open("replay")
	if err != nil {
		t.Fatal(err)
	}
	equalEvents(t, got2, evs)
	if l.NextSeq() != int64(len(evs)) {
		t.Errorf("NextSeq = %d, want %d", l.NextSeq(), len(evs))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestAppendSequence(t *testing.T) {
	s := New(t.TempDir())
	l, err := s.Create(Header{ID: "seq"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ev := func(seq int64) event.Event {
		e := event.New(event.TypeStepStart, event.Step{Turn: 1, Step: 1})
		e.Seq = seq
		return e
	}
	for _, tt := range []struct {
		seq  int64
		want error
	}{
		{1, ErrSequence}, {-1, ErrSequence}, {0, nil}, {0, ErrSequence}, {2, ErrSequence}, {1, nil},
	} {
		if err := l.Append(ev(tt.seq)); !errors.Is(err, tt.want) {
			t.Errorf("Append seq %d: err = %v, want %v", tt.seq, err, tt.want)
		}
	}
	if err := l.Append(event.Event{Type: "made/up", Seq: 2, Data: json.RawMessage(`{}`)}); err == nil {
		t.Error("Append of an unknown, non-ignorable type succeeded")
	}
	if err := l.Append(event.Event{Seq: 2}); err == nil {
		t.Error("Append of an event without type succeeded")
	}
	if l.NextSeq() != 2 {
		t.Errorf("NextSeq = %d after refusals", l.NextSeq())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ev(2)); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v", err)
	}
	if err := l.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close: %v", err)
	}
	_, got, err := s.Read("seq")
	if err != nil || len(got) != 2 || got[0].Seq != 0 || got[1].Seq != 1 {
		t.Fatalf("Read = %v, %v", got, err)
	}
}

// TestTornTailEveryOffset cuts the last record at every byte and checks
// that Open keeps the valid prefix, keeps a .broken copy of the file as
// found, and that the next Append continues the seq.
func TestTornTailEveryOffset(t *testing.T) {
	evs := turnEvents(1, 0)
	last := event.New(event.TypeSessionTitle, event.SessionTitle{Title: "title"})
	evs = append(evs, seqd(int64(len(evs)), last)...)
	_, path := createWith(t, "torn", evs)
	full := readFile(t, path)
	lastLine := full[bytes.LastIndexByte(full[:len(full)-1], '\n')+1:]
	prefix := full[:len(full)-len(lastLine)]

	// Each cut gets its own session, planted directly (no Create, whose
	// fsyncs would dominate), and the cuts run in parallel so fsync
	// latency overlaps.
	root := t.TempDir()
	for cut := 0; cut < len(lastLine); cut++ {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			t.Parallel()
			s := New(filepath.Join(root, fmt.Sprint(cut)))
			dir := filepath.Join(s.ProjectDir("/work/project"), "torn")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			damaged := append(append([]byte{}, prefix...), lastLine[:cut]...)
			p := filepath.Join(dir, logFile)
			if err := os.WriteFile(p, damaged, 0o600); err != nil {
				t.Fatal(err)
			}

			// Read ignores the torn line without writing anything.
			if _, got, err := s.Read("torn"); err != nil {
				t.Fatalf("Read: %v", err)
			} else {
				equalEvents(t, got, evs[:len(evs)-1])
			}
			if !bytes.Equal(readFile(t, p), damaged) {
				t.Fatal("Read changed the file")
			}

			l, got, err := s.Open("torn")
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			equalEvents(t, got, evs[:len(evs)-1])
			broken, err := os.ReadFile(p + ".broken")
			if cut == 0 {
				if err == nil {
					t.Fatal("a .broken copy was made of an intact file")
				}
			} else if err != nil || !bytes.Equal(broken, damaged) {
				t.Fatalf(".broken copy = %q, %v", broken, err)
			}
			if l.NextSeq() != int64(len(evs)-1) {
				t.Fatalf("NextSeq = %d", l.NextSeq())
			}
			again := last
			again.Seq = l.NextSeq()
			if err := l.Append(again); err != nil {
				t.Fatalf("Append after repair: %v", err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(readFile(t, p), full) {
				t.Fatal("repaired and re-appended log differs from the original")
			}
		})
	}
}

// TestTornTailClosesTurn cuts a turn/end off: Open must drop the torn line
// and then close the now unfinished turn.
func TestTornTailClosesTurn(t *testing.T) {
	evs := turnEvents(1, 0)
	_, path := createWith(t, "torn-turn", evs)
	full := readFile(t, path)
	if err := os.WriteFile(path, full[:len(full)-5], 0o600); err != nil {
		t.Fatal(err)
	}
	s := New(filepath.Dir(filepath.Dir(filepath.Dir(path))))
	l, got, err := s.Open("torn-turn")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	want := append(types(evs[:len(evs)-1]), event.TypeTurnEnd)
	if !reflect.DeepEqual(types(got), want) {
		t.Fatalf("types = %v", types(got))
	}
	end, _ := event.Decode[event.TurnEnd](got[len(got)-1])
	if end.Reason.Kind != event.ReasonInterrupted || end.Turn != 1 {
		t.Errorf("turn/end = %+v", end)
	}
}

// TestCorruptionRefused damages a log before its last line in many ways:
// Open and Read refuse it with a message naming file and line, and the file
// stays byte-identical with no .broken copy.
func TestCorruptionRefused(t *testing.T) {
	evs := sessionEvents(20)
	lines := func(full []byte) [][]byte { return bytes.SplitAfter(full, []byte("\n")) }
	join := func(ls [][]byte) []byte { return bytes.Join(ls, nil) }
	tests := []struct {
		name   string
		damage func(ls [][]byte) [][]byte
		want   error
		msg    string
	}{
		{"garbage mid-log", func(ls [][]byte) [][]byte {
			ls[5] = []byte("{not json\n")
			return ls
		}, ErrCorrupt, "line 6: not a JSON event"},
		{"missing record", func(ls [][]byte) [][]byte {
			return append(ls[:4:4], ls[5:]...)
		}, ErrCorrupt, "line 5: event seq 4 where 3 was expected"},
		{"duplicated record", func(ls [][]byte) [][]byte {
			return append(ls[:5:5], ls[4:]...)
		}, ErrCorrupt, "line 6: event seq 3 where 4 was expected"},
		{"seq wrong on last line", func(ls [][]byte) [][]byte {
			ls[len(ls)-2] = bytes.Replace(ls[len(ls)-2], []byte(`"seq":`), []byte(`"seq":9`), 1)
			return ls
		}, ErrCorrupt, "where"},
		{"record split in two", func(ls [][]byte) [][]byte {
			r := ls[3]
			ls[3] = append(append([]byte{}, r[:10]...), '\n')
			return append(ls[:4:4], append([][]byte{r[10:]}, ls[4:]...)...)
		}, ErrCorrupt, "line 4: not a JSON event"},
		{"blank line mid-log", func(ls [][]byte) [][]byte {
			return append(ls[:3:3], append([][]byte{[]byte("\n")}, ls[3:]...)...)
		}, ErrCorrupt, "line 4"},
		{"unknown type mid-log", func(ls [][]byte) [][]byte {
			ls[2] = bytes.Replace(ls[2], []byte(`"type":"step/start"`), []byte(`"type":"step/begin"`), 1)
			return ls
		}, ErrCorrupt, `line 3: unknown event type "step/begin"`},
		{"unknown type on last line", func(ls [][]byte) [][]byte {
			n := len(ls) - 2
			ls[n] = bytes.Replace(ls[n], []byte(`"type":"turn/end"`), []byte(`"type":"turn/over"`), 1)
			return ls
		}, ErrCorrupt, "unknown event type"},
		{"NUL bytes mid-log", func(ls [][]byte) [][]byte {
			ls[7] = append(bytes.Repeat([]byte{0}, len(ls[7])-1), '\n')
			return ls
		}, ErrCorrupt, "line 8"},
		{"header missing", func(ls [][]byte) [][]byte { return ls[1:] }, ErrCorrupt, "line 1"},
		{"header not first", func(ls [][]byte) [][]byte {
			ls[0], ls[1] = ls[1], ls[0]
			return ls
		}, ErrCorrupt, "line 1: the first line is not a session header"},
		{"header torn", func(ls [][]byte) [][]byte { return [][]byte{ls[0][:20]} }, ErrCorrupt, "incomplete"},
		{"empty file", func(ls [][]byte) [][]byte { return nil }, ErrCorrupt, "empty"},
		{"bad payload in the unfinished turn, torn tail", func(ls [][]byte) [][]byte {
			n := len(ls) - 2 // the turn/end: cut it, so the last turn is open
			ls[n] = ls[n][:len(ls[n])/2]
			for i := n - 1; i > 0; i-- {
				if bytes.Contains(ls[i], []byte(`"type":"turn/start"`)) {
					ls[i] = bytes.Replace(ls[i], []byte(`"data":{"turn":`), []byte(`"data":{"turn":"x","t":`), 1)
					break
				}
			}
			return ls
		}, ErrCorrupt, "bad turn/start payload"},
		{"version 1", func(ls [][]byte) [][]byte {
			ls[0] = bytes.Replace(ls[0], []byte(`"version":0`), []byte(`"version":1`), 1)
			return ls
		}, ErrVersion, "has format version 1; this dsh reads only version 0"},
		{"version missing", func(ls [][]byte) [][]byte {
			ls[0] = bytes.Replace(ls[0], []byte(`"version":0,`), nil, 1)
			return ls
		}, ErrVersion, "format version missing"},
		{"version as string", func(ls [][]byte) [][]byte {
			ls[0] = bytes.Replace(ls[0], []byte(`"version":0`), []byte(`"version":"0"`), 1)
			return ls
		}, ErrVersion, `format version "0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, path := createWith(t, "bad", evs)
			damaged := join(tt.damage(lines(readFile(t, path))))
			if err := os.WriteFile(path, damaged, 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := s.Open("bad")
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Open: err = %v\nwant %v containing %q", err, tt.want, tt.msg)
			}
			if tt.want == ErrCorrupt && !strings.Contains(err.Error(), path) {
				t.Errorf("error does not name the file: %v", err)
			}
			if _, _, rerr := s.Read("bad"); !errors.Is(rerr, tt.want) || rerr.Error() != err.Error() {
				t.Errorf("Read: err = %v", rerr)
			}
			if !bytes.Equal(readFile(t, path), damaged) {
				t.Error("the refused log was modified")
			}
			if _, err := os.Stat(path + ".broken"); err == nil {
				t.Error("a .broken copy was made of a corrupt log")
			}
			if leased, _ := s.Leased("bad"); leased {
				t.Error("the lease was kept after a refused Open")
			}
		})
	}
}

// TestUnfinishedTurnClosed crashes a turn at several points and checks the
// synthetic closers of Read (memory only) and Open (appended durably).
func TestUnfinishedTurnClosed(t *testing.T) {
	full := turnEvents(1, 0) // 0 turn/start 1 step/start 2 user 3 assistant(tool-call) 4 tool/call 5 tool/result 6 step/end ...
	assistantOnly := event.New(event.TypeAssistantMessage, event.AssistantMessage{Turn: 1, Step: 1, Message: event.Message{
		ID: "a", Role: "assistant", Content: []event.ContentBlock{
			{Type: event.BlockToolCall, ID: "c1", Name: "bash", Arguments: `{}`},
			{Type: event.BlockToolCall, ID: "c2", Name: "read", Arguments: `{}`},
		}}})
	tests := []struct {
		name      string
		evs       []event.Event
		wantTypes []string
		wantCalls []string // callIds given TOOL_OUTCOME_UNKNOWN, in order
	}{
		{"finished turn", full, nil, nil},
		{"no turn at all", seqd(0, event.New(event.TypeSessionTitle, event.SessionTitle{Title: "x"})), nil, nil},
		{"after turn/start", full[:1], []string{event.TypeTurnEnd}, nil},
		{"in a step", full[:3], []string{event.TypeStepEnd, event.TypeTurnEnd}, nil},
		{"assistant message committed, its tool/call not", full[:4],
			[]string{event.TypeToolCall, event.TypeToolResult, event.TypeStepEnd, event.TypeTurnEnd}, []string{"call_1"}},
		{"tool called, no result", full[:5],
			[]string{event.TypeToolResult, event.TypeStepEnd, event.TypeTurnEnd}, []string{"call_1"}},
		{"calls known only from the assistant message",
			seqd(0, append(append([]event.Event{}, full[:2]...), assistantOnly,
				event.New(event.TypeToolCall, event.ToolCall{Turn: 1, Step: 1, CallID: "c2", Name: "read"}))...),
			[]string{event.TypeToolCall, event.TypeToolResult, event.TypeToolResult, event.TypeStepEnd, event.TypeTurnEnd},
			[]string{"c1", "c2"}},
		{"result recorded, step open", full[:6], []string{event.TypeStepEnd, event.TypeTurnEnd}, nil},
		{"between steps", full[:7], []string{event.TypeTurnEnd}, nil},
		{"second turn open", append(append([]event.Event{}, full...), seqd(int64(len(full)), turnEvents(2, 0)[:5]...)...),
			[]string{event.TypeToolResult, event.TypeStepEnd, event.TypeTurnEnd}, []string{"call_2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, path := createWith(t, "crash", tt.evs)
			before := readFile(t, path)
			n := len(tt.evs)

			_, read, err := s.Read("crash")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(readFile(t, path), before) {
				t.Fatal("Read wrote to the log")
			}
			checkClosers(t, read, tt.evs, tt.wantTypes, tt.wantCalls)

			l, opened, err := s.Open("crash")
			if err != nil {
				t.Fatal(err)
			}
			checkClosers(t, opened, tt.evs, tt.wantTypes, tt.wantCalls)
			if l.NextSeq() != int64(len(opened)) {
				t.Errorf("NextSeq = %d, want %d", l.NextSeq(), len(opened))
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// The closers are durable: a plain Read now sees them on disk,
			// with the same message ids as the in-memory closure.
			_, again, err := s.Read("crash")
			if err != nil {
				t.Fatal(err)
			}
			equalEvents(t, again, opened)
			for i := n; i < len(read); i++ {
				if !bytes.Equal(read[i].Data, opened[i].Data) {
					t.Errorf("closer %d: Read made %s, Open made %s", i, read[i].Data, opened[i].Data)
				}
			}
		})
	}
}

func checkClosers(t *testing.T, got, written []event.Event, wantTypes, wantCalls []string) {
	t.Helper()
	n := len(written)
	if len(got) < n {
		t.Fatalf("got %d events, fewer than the %d written", len(got), n)
	}
	for i := range written {
		if !reflect.DeepEqual(got[i].Data, written[i].Data) || got[i].Seq != written[i].Seq {
			t.Fatalf("written event %d changed", i)
		}
	}
	closers := got[n:]
	if !reflect.DeepEqual(types(closers), append([]string(nil), wantTypes...)) &&
		!(len(closers) == 0 && len(wantTypes) == 0) {
		t.Fatalf("closers = %v, want %v", types(closers), wantTypes)
	}
	// Every result answers a call announced by a tool/call before it, and
	// a synthetic tool/call repeats the assistant message's block.
	announced := map[string]bool{}
	blocks := map[string]event.ContentBlock{}
	for _, ev := range written {
		switch ev.Type {
		case event.TypeToolCall:
			d, _ := event.Decode[event.ToolCall](ev)
			announced[d.CallID] = true
		case event.TypeAssistantMessage:
			d, _ := event.Decode[event.AssistantMessage](ev)
			for _, b := range d.Message.Content {
				if b.Type == event.BlockToolCall {
					blocks[b.ID] = b
				}
			}
		}
	}
	var calls []string
	for i, ev := range closers {
		if ev.Seq != int64(n+i) {
			t.Errorf("closer seq %d, want %d", ev.Seq, n+i)
		}
		switch ev.Type {
		case event.TypeToolResult:
			r, err := event.Decode[event.ToolResult](ev)
			if err != nil {
				t.Fatal(err)
			}
			b := r.Result()
			if r.Error == nil || r.Error.Name != "ToolError" || r.Error.Code != event.ToolOutcomeUnknown ||
				!b.IsError || len(b.Content) != 1 || !strings.Contains(b.Content[0].Text, "stopped before the outcome") ||
				r.Message.Role != "user" || r.Message.Source.Kind != "tool" || r.Message.Source.CallID != b.ToolCallID ||
				len(r.Message.ID) != 36 || string(ev.SurfaceOp) != `"append"` {
				t.Errorf("synthetic tool/result = %s", ev.Data)
			}
			calls = append(calls, b.ToolCallID)
			if !announced[b.ToolCallID] {
				t.Errorf("result for call %s, which no tool/call announced", b.ToolCallID)
			}
		case event.TypeToolCall:
			d, err := event.Decode[event.ToolCall](ev)
			if err != nil {
				t.Fatal(err)
			}
			b, ok := blocks[d.CallID]
			if !ok || announced[d.CallID] || d.Name != b.Name || d.Arguments != b.Arguments || d.Turn == 0 || d.Step == 0 {
				t.Errorf("synthetic tool/call = %s (block %+v, already announced %v)", ev.Data, b, announced[d.CallID])
			}
			announced[d.CallID] = true
		case event.TypeTurnEnd:
			e, _ := event.Decode[event.TurnEnd](ev)
			if e.Reason.Kind != event.ReasonInterrupted || e.Turn == 0 {
				t.Errorf("synthetic turn/end = %s", ev.Data)
			}
		case event.TypeStepEnd:
			st, _ := event.Decode[event.Step](ev)
			if st.Turn == 0 || st.Step == 0 {
				t.Errorf("synthetic step/end = %s", ev.Data)
			}
		}
	}
	if !reflect.DeepEqual(calls, append([]string(nil), wantCalls...)) && !(len(calls) == 0 && len(wantCalls) == 0) {
		t.Errorf("outcome-unknown results for %v, want %v", calls, wantCalls)
	}
}

func TestLongLines(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB tool output, 4x the read buffer
	ev := event.New(event.TypeToolResult, event.ToolResult{Turn: 1, Step: 1, Message: event.Message{ID: "r", Role: "user",
		Content: []event.ContentBlock{{Type: event.BlockToolResult, ToolCallID: "c", Content: []event.ContentBlock{event.Text(big)}}}}})
	evs := seqd(0, ev, event.New(event.TypeSessionTitle, event.SessionTitle{Title: "big"}))
	s, _ := createWith(t, strings.Repeat("long-id-", 2000), evs)
	_, got, err := s.Read(strings.Repeat("long-id-", 2000))
	if err != nil {
		t.Fatal(err)
	}
	equalEvents(t, got, evs)
	infos, err := s.List("")
	if err != nil || len(infos) != 1 || infos[0].Title != "big" || infos[0].Events != 2 {
		t.Fatalf("List = %+v, %v", infos, err)
	}
}

// FuzzDecodeEvent checks that the fast envelope decoder agrees with
// json.Unmarshal: same event when it accepts, and it never accepts what
// encoding/json rejects.
func FuzzDecodeEvent(f *testing.F) {
	for _, ev := range turnEvents(1, 0) {
		rec, _ := encodeRecord(ev)
		f.Add(bytes.TrimSuffix(rec, []byte("\n")))
	}
	for _, s := range []string{
		`{}`, ` { "type" : "a" , "seq" : 1 } `, `{"type":"a","seq":1.0}`, `{"type":"a","seq":1e2}`,
		`{"type":"a","seq":-0}`, `{"type":"a","seq":99999999999999999999}`, `{"Type":"a"}`, `{"TYPE":"a","type":"b"}`,
		`{"type":"a\u0062"}`, `{"type":"\u00e9"}`, `{"type":"é"}`, `{"data":null}`, `{"data":nul}`, `{"data":[1,2,]}`,
		`{"data":{"a":1,}}`, `{"data":"\x01"}`, `{"data":"\q"}`, `{"data":"\u12"}`, `{"data":01}`, `{"data":-}`,
		`{"data":1.}`, `{"data":1e}`, `{"data":.5}`, `{"data":truex}`, `{"data":[true,false,null,"x",{"y":[]}]}`,
		`{"seq":1}x`, `{"seq":1}{}`, `{"ignorable":1}`, `{"ignorable":true,"ignorable":false}`, `{"sourceEventSeqs":[1,2]}`,
		`{"sourceEventSeqs":null}`, `{"surfaceOp":{"op":"replace","start":1,"end":2}}`, `{"data":"\xff\xfe"}`,
		`{"data":1,"data":2}`, `{"x":{"deep":[[[[]]]]}}`, "{\"data\":\"a\tb\"}", `{"type":"a"` + "\n" + `}`, `[]`, `"x"`, ``,
		`{"ſeq":5}`, `{"seq":5,"K":1}`, `{"type":null}`, `{"seq":null}`, `{"seq":"1"}`,
		`{"type":"assistant/chunk","seq":7,"time":1,"data":{"turn":1,"chunk":{"type":"finish"}}}`,
		`{"type":"assistant/chunk","seq":07,"time":1,"data":{}}`, `{"type":"assistant/chunk","seq":-1,"time":1e3,"data":{}}`,
		`{"type":"assistant/chunk","seq":7,"time":1,"data":{}} `, `{"type":"assistant/chunk","seq":7,"time":1,"data":{"a":"\u00"}}`,
		`{"type":"assistant/chunk","seq":`, `{"type":"assistant/chunk","seq":7,"time":1,"data":{},"seq":8}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast event.Event
		ok := decodeFast(line, &fast)
		var slow event.Event
		err := json.Unmarshal(line, &slow)
		if ok && err != nil {
			t.Fatalf("fast path accepted %q, encoding/json says %v", line, err)
		}
		if ok && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("decoding %q:\nfast %#v\nslow %#v", line, fast, slow)
		}
		var viaDecode event.Event
		if derr := decodeEvent(line, &viaDecode); (derr == nil) != (err == nil) ||
			err == nil && !reflect.DeepEqual(viaDecode, slow) {
			t.Fatalf("decodeEvent(%q) = %#v, %v; encoding/json %#v, %v", line, viaDecode, derr, slow, err)
		}
		// What a wake skips undecoded is a chunk encoding/json reads with
		// that seq.
		if seq, ok := liveChunk(line); ok && (err != nil || slow.Type != event.TypeAssistantChunk || slow.Seq != seq) {
			t.Fatalf("liveChunk(%q) = %d; encoding/json %#v, %v", line, seq, slow, err)
		}
	})
}
