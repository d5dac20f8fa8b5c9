package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
)

// streamedTurn returns the events of a turn whose model calls streamed:
// turnEvents with deltas assistant/chunk events before each
// assistant/message (as core records them), numbered from seq.
func streamedTurn(turn int, seq int64, deltas int) []event.Event {
	var out []event.Event
	for _, ev := range turnEvents(turn, 0) {
		if ev.Type == event.TypeAssistantMessage {
			out = append(out, chunkEvents(turn, deltas)...)
		}
		out = append(out, ev)
	}
	for i := range out {
		out[i].Seq = seq + int64(i)
		out[i].Time = 1_700_000_000_000 + out[i].Seq
	}
	return out
}

// chunkEvents returns one streamed text block: start, n deltas, end,
// finish.
func chunkEvents(turn, n int) []event.Event {
	zero := 0
	text := "a few words"
	chunk := func(c event.Chunk) event.Event {
		return event.New(event.TypeAssistantChunk, event.AssistantChunk{Turn: turn, Step: 1, Chunk: c})
	}
	out := []event.Event{chunk(event.Chunk{Type: event.ChunkBlockStart, Index: &zero, BlockType: event.BlockText})}
	for range n {
		out = append(out, chunk(event.Chunk{Type: event.ChunkTextDelta, Index: &zero, Text: &text}))
	}
	end := event.Text(text)
	return append(out,
		chunk(event.Chunk{Type: event.ChunkBlockEnd, Index: &zero, Block: &end}),
		chunk(event.Chunk{Type: event.ChunkFinish, Reason: &event.FinishReason{Kind: event.FinishStop}}))
}

func withoutChunks(evs []event.Event) []event.Event {
	var out []event.Event
	for _, ev := range evs {
		if ev.Type != event.TypeAssistantChunk {
			out = append(out, ev)
		}
	}
	return out
}

// TestWakeSkipsLiveStream: Open and ReadCommitted return the committed
// events of a streamed session with their own seqs and leave the chunks
// out without decoding them (bounded allocations, where a decode costs at
// least one per line); Read still returns every event; the log goes on at
// the right seq.
func TestWakeSkipsLiveStream(t *testing.T) {
	var evs []event.Event
	for turn := 1; turn <= 20; turn++ {
		evs = append(evs, streamedTurn(turn, int64(len(evs)), 100)...)
	}
	s, _ := createWith(t, "stream", evs)
	committed := withoutChunks(evs)
	if len(evs)-len(committed) < 4000 {
		t.Fatalf("only %d chunks", len(evs)-len(committed))
	}

	_, all, err := s.Read("stream")
	if err != nil {
		t.Fatal(err)
	}
	equalEvents(t, all, evs)
	_, got, err := s.ReadCommitted("stream")
	if err != nil {
		t.Fatal(err)
	}
	equalEvents(t, got, committed)

	l, got, err := s.Open("stream")
	if err != nil {
		t.Fatal(err)
	}
	equalEvents(t, got, committed)
	if l.NextSeq() != int64(len(evs)) {
		t.Fatalf("NextSeq = %d, want %d", l.NextSeq(), len(evs))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	allocs := testing.AllocsPerRun(3, func() {
		l, _, err := s.Open("stream")
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
	})
	if limit := float64(len(evs)-len(committed)) / 4; allocs > limit {
		t.Fatalf("Open of %d chunk lines allocated %.0f times (limit %.0f): chunks are decoded", len(evs)-len(committed), allocs, limit)
	}
}

// TestWakeChunkShapes: a chunk line in another writer's shape (other key
// order, spaces) is decoded and still left out of a wake; a chunk with the
// wrong seq or damaged JSON before the last line is corruption, as any
// line; a torn chunk at the end is repaired like any torn line.
func TestWakeChunkShapes(t *testing.T) {
	evs := streamedTurn(1, 0, 3)
	cut := 3 // after turn/start, step/start, user/message: the chunks
	if evs[cut].Type != event.TypeAssistantChunk {
		t.Fatalf("event %d is %s", cut, evs[cut].Type)
	}
	_, path := createWith(t, "shapes", evs)
	good := readFile(t, path)
	lines := bytes.SplitAfter(good, []byte("\n"))
	chunkLine := func(i int) int { return i + 1 } // line index of event i (header first)
	tests := []struct {
		name    string
		line    []byte // replaces the line of event cut
		corrupt bool
	}{
		{"other key order", []byte(fmt.Sprintf(`{"seq":%d,"type":"assistant/chunk","time":1,"data":{"turn":1,"step":1,"chunk":{"type":"finish"}}}`+"\n", cut)), false},
		{"spaces", []byte(fmt.Sprintf(`{"type":"assistant/chunk","seq":%d,"time":1, "data":{}}`+"\n", cut)), false},
		{"wrong seq", []byte(`{"type":"assistant/chunk","seq":99,"time":1,"data":{}}` + "\n"), true},
		{"leading zero seq", []byte(fmt.Sprintf(`{"type":"assistant/chunk","seq":0%d,"time":1,"data":{}}`+"\n", cut)), true},
		{"damaged data", []byte(fmt.Sprintf(`{"type":"assistant/chunk","seq":%d,"time":1,"data":{"turn":}}`+"\n", cut)), true},
		{"trailing garbage", []byte(fmt.Sprintf(`{"type":"assistant/chunk","seq":%d,"time":1,"data":{}}x`+"\n", cut)), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ls := append([][]byte{}, lines...)
			ls[chunkLine(cut)] = tc.line
			body := bytes.Join(ls, nil)
			s := New(filepath.Join(t.TempDir(), "sessions"))
			dir := filepath.Join(s.ProjectDir("/work/project"), "shapes")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, logFile), body, 0o600); err != nil {
				t.Fatal(err)
			}
			l, got, err := s.Open("shapes")
			if tc.corrupt {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Open = %v, want ErrCorrupt", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			equalEvents(t, got, withoutChunks(evs))
		})
	}
}

// TestWakeRepairsTornChunk: a process that died while streaming leaves a
// torn chunk line after complete ones; Open keeps a .broken copy, cuts it,
// closes the turn with seqs that follow the last whole line, and a later
// Read sees exactly that.
func TestWakeRepairsTornChunk(t *testing.T) {
	evs := streamedTurn(1, 0, 5)
	n := 0
	for evs[n].Type != event.TypeAssistantChunk {
		n++
	}
	n += 4 // three whole chunks, the fourth torn
	_, path := createWith(t, "torn-chunk", evs[:n])
	whole := readFile(t, path)
	last := bytes.LastIndexByte(whole[:len(whole)-1], '\n') + 1
	damaged := whole[:len(whole)-7]
	if err := os.WriteFile(path, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	s := New(filepath.Dir(filepath.Dir(filepath.Dir(path))))
	l, got, err := s.Open("torn-chunk")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path + ".broken"); err != nil || !bytes.Equal(b, damaged) {
		t.Fatalf(".broken copy = %d bytes, %v", len(b), err)
	}
	if l.NextSeq() != int64(n+1) {
		t.Fatalf("NextSeq = %d, want %d", l.NextSeq(), n+1)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	want := append(types(withoutChunks(evs[:n-1])), event.TypeStepEnd, event.TypeTurnEnd)
	if !reflect.DeepEqual(types(got), want) {
		t.Fatalf("types = %v, want %v", types(got), want)
	}
	if got[len(got)-2].Seq != int64(n-1) || got[len(got)-1].Seq != int64(n) {
		t.Fatalf("closers at seqs %d, %d; want %d, %d", got[len(got)-2].Seq, got[len(got)-1].Seq, n-1, n)
	}
	if !bytes.HasPrefix(readFile(t, path), whole[:last]) {
		t.Fatal("the whole lines before the torn chunk were not kept")
	}
	_, all, err := s.Read("torn-chunk")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != n+1 || all[n].Type != event.TypeTurnEnd {
		t.Fatalf("after repair Read gives %v", types(all))
	}
}
