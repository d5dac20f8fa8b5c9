package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/event"
)

// fuzzRoot returns a directory for the fuzz target's session roots: on
// tmpfs when the machine has one, since every repair fsyncs and the disk
// would otherwise set the pace, else the test's temporary directory.
func fuzzRoot(f *testing.F) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "dsh-store-fuzz-"); err == nil {
			f.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return f.TempDir()
}

// fuzzSession creates session "fuzz" under root and returns the path of
// its log and the log's header line.
func fuzzSession(f *testing.F, root string) (string, []byte) {
	l, err := New(root).Create(Header{ID: "fuzz", Cwd: "/work/project"})
	if err != nil {
		f.Fatal(err)
	}
	if err := l.Close(); err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(l.Dir(), logFile)
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return path, b
}

// encodeEvents renders events as log lines.
func encodeEvents(tb testing.TB, evs []event.Event) []byte {
	var out []byte
	for _, ev := range evs {
		line, err := encodeLine(ev)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, line...)
	}
	return out
}

// fuzzMaxBody caps the fuzzed log body. Every run writes, repairs and
// re-reads files, so a large input found interesting would take the
// minimizer minutes; the structure of a log is all in its first few
// records anyway.
const fuzzMaxBody = 4 << 10

// compactTurn is a realistic turn with small payloads (turnEvents' are
// sized for benchmarks): a prompt, a step calling one tool, its result and
// an answer. open leaves it at the tool call, as a crash would.
func compactTurn(turn int, seq int64, open bool) []event.Event {
	call := fmt.Sprintf("c%d", turn)
	evs := []event.Event{
		event.New(event.TypeTurnStart, event.TurnStart{Turn: turn}),
		event.New(event.TypeStepStart, event.Step{Turn: turn, Step: 1}),
		event.New(event.TypeUserMessage, event.Message{ID: "u", Role: "user", Content: []event.ContentBlock{event.Text("ls")}}),
		event.New(event.TypeAssistantMessage, event.AssistantMessage{Turn: turn, Step: 1, Message: event.Message{ID: "a", Role: "assistant",
			Content: []event.ContentBlock{event.Reasoning("r"), {Type: event.BlockToolCall, ID: call, Name: "bash", Arguments: `{"command":"ls"}`}}}}),
		event.New(event.TypeToolCall, event.ToolCall{Turn: turn, Step: 1, CallID: call, Name: "bash", Arguments: `{"command":"ls"}`}),
	}
	if !open {
		evs = append(evs,
			event.New(event.TypeToolResult, event.ToolResult{Turn: turn, Step: 1, Message: event.Message{ID: "t", Role: "user",
				Content: []event.ContentBlock{{Type: event.BlockToolResult, ToolCallID: call, Content: []event.ContentBlock{event.Text("a.go")}}},
				Source:  event.Source{Kind: "tool", CallID: call}}}),
			event.New(event.TypeStepEnd, event.Step{Turn: turn, Step: 1}),
			event.New(event.TypeTurnEnd, event.TurnEnd{Turn: turn, Reason: event.TurnEndReason{Kind: event.ReasonCompleted}}),
		)
	}
	for i := range evs {
		evs[i].Seq = seq + int64(i)
		evs[i].Time = 1
	}
	return evs
}

// replaySeeds are log bodies (everything after the header line) near the
// interesting edges: whole turns, an open turn, torn tails, broken seqs,
// unknown types, damage before the last turn and payloads closeTurn cannot
// read.
func replaySeeds(f *testing.F) [][]byte {
	full := encodeEvents(f, compactTurn(1, 0, false))
	two := append(slices.Clone(full), encodeEvents(f, compactTurn(2, 8, true))...)
	open := encodeEvents(f, compactTurn(1, 0, true))
	badSeq := encodeEvents(f, seqd(3, event.New(event.TypeSessionTitle, event.SessionTitle{Title: "x"})))
	unknown := []byte(`{"type":"x/y","seq":0,"time":1,"data":{}}` + "\n")
	ignorable := []byte(`{"type":"x/y","seq":0,"time":1,"data":{},"ignorable":true}` + "\n")
	badPayload := []byte(`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}` + "\n" +
		`{"type":"tool/result","seq":1,"time":1,"data":{"message":5}}` + "\n")
	chunks := []byte(`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}` + "\n" +
		`{"type":"assistant/chunk","seq":1,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"finish"}}}` + "\n" +
		`{"type":"assistant/chunk","seq":2,"time":1,"data":{"turn":1,"chunk":{"type":"text-delta","text":"a\u00e9\n"}}}` + "\n" +
		`{"seq":3,"type":"assistant/chunk","time":1,"data":{}}` + "\n" +
		`{"type":"assistant/chunk","seq":4,"time":1,"data":{"t`)
	deep := []byte(`{"type":"session/title","seq":0,"time":1,"data":` + strings.Repeat("[", 1500) + strings.Repeat("]", 1500) + "}\n")
	seeds := [][]byte{
		nil,
		full,
		two,
		open,
		append(slices.Clone(open), `{"type":"tool/res`...),
		append(slices.Clone(full), `{"type":"turn/start","seq":8,"ti`...),
		append(append(slices.Clone(full[:len(full)/2]), "garbage\n"...), full[len(full)/2:]...),
		append(slices.Clone(two), "not json at all"...),
		badSeq,
		unknown,
		ignorable,
		badPayload,
		chunks,
		deep,
		[]byte("\n\n"),
		[]byte(`{"type":"session","version":1,"id":"fuzz"}` + "\n"),
		[]byte(`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1},"seq":1}` + "\n"),
		[]byte(`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}` + "\r\n" + "\xff\xfe\n"),
	}
	for _, s := range seeds {
		if len(s) > fuzzMaxBody {
			f.Fatalf("a seed of %d bytes is over the %d-byte cap", len(s), fuzzMaxBody)
		}
	}
	return seeds
}

// FuzzReplay writes arbitrary bytes after a valid session header and reads
// the log back. Read never panics; it returns events numbered 0.. or fails
// with ErrCorrupt or ErrVersion. When Read succeeds, opening a copy for
// writing (which repairs a torn tail and durably closes an unfinished turn)
// succeeds and returns the same events, and reading the repaired copy
// returns them again, byte for byte. When Read fails, Open refuses the copy
// the same way and leaves it exactly as it was.
func FuzzReplay(f *testing.F) {
	for _, s := range replaySeeds(f) {
		f.Add(s)
	}
	base := fuzzRoot(f)
	rootA, rootB := filepath.Join(base, "a"), filepath.Join(base, "b")
	pathA, header := fuzzSession(f, rootA)
	pathB, _ := fuzzSession(f, rootB)
	storeA, storeB := New(rootA), New(rootB).WithoutSync()

	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > fuzzMaxBody {
			return
		}
		content := append(slices.Clone(header), body...)
		for _, p := range []string{pathA, pathB} {
			if err := os.WriteFile(p, content, 0o600); err != nil {
				t.Fatal(err)
			}
			broken, _ := filepath.Glob(p + ".broken*")
			for _, b := range broken {
				os.Remove(b)
			}
		}
		start := time.Now().UnixMilli()
		h, evs, err := storeA.Read("fuzz")
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("Read failed with neither ErrCorrupt nor ErrVersion: %v", err)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			l, _, oerr := storeB.Open("fuzz")
			if oerr == nil {
				l.Close()
				t.Fatalf("Read refused the log (%v) but Open accepted it", err)
			}
			if errors.Is(err, ErrCorrupt) != errors.Is(oerr, ErrCorrupt) {
				t.Fatalf("Read: %v; Open: %v", err, oerr)
			}
			if got, _ := os.ReadFile(pathB); !bytes.Equal(got, content) {
				t.Fatal("Open changed a log it refused")
			}
			return
		}
		if h.ID != "fuzz" {
			t.Fatalf("header id %q", h.ID)
		}
		for i, ev := range evs {
			if ev.Seq != int64(i) {
				t.Fatalf("event %d has seq %d", i, ev.Seq)
			}
		}

		l, opened, err := storeB.Open("fuzz")
		if err != nil {
			t.Fatalf("Read succeeded but Open failed: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		// Open leaves the live stream out, as ReadCommitted does.
		sameEvents(t, "Open vs Read", opened, withoutChunks(evs), start)
		_, committed, err := storeA.ReadCommitted("fuzz")
		if err != nil {
			t.Fatalf("Read succeeded but ReadCommitted failed: %v", err)
		}
		sameEvents(t, "ReadCommitted vs Read", committed, withoutChunks(evs), start)
		_, again, err := storeB.ReadCommitted("fuzz")
		if err != nil {
			t.Fatalf("re-Read of the repaired log: %v", err)
		}
		sameEvents(t, "re-Read vs Open", again, opened, -1)
	})
}

// sameEvents compares two replays. Synthetic closers are stamped with the
// time they were made, so when since >= 0 their times may differ provided
// both are at least since (ms).
func sameEvents(t *testing.T, what string, got, want []event.Event, since int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Time != w.Time && (since < 0 || g.Time < since || w.Time < since) {
			t.Fatalf("%s: event %d time %d, want %d", what, i, g.Time, w.Time)
		}
		if g.Type != w.Type || g.Seq != w.Seq || !bytes.Equal(g.Data, w.Data) ||
			!bytes.Equal(g.SurfaceOp, w.SurfaceOp) || !slices.Equal(g.SourceEventSeqs, w.SourceEventSeqs) ||
			g.Ignorable != w.Ignorable {
			t.Fatalf("%s: event %d differs:\n got %+v\nwant %+v", what, i, g, w)
		}
	}
}
