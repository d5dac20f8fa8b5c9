package event

import (
	"encoding/json"
	"testing"
)

// TestAppendJSONMatchesMarshal pins the fast encoder to json.Marshal's
// bytes for events made by New.
func TestAppendJSONMatchesMarshal(t *testing.T) {
	evs := []Event{
		New(TypeTurnStart, TurnStart{Turn: 1}),
		New(TypeUserMessage, Message{ID: "u", Role: "user", Content: []ContentBlock{Text("a <b> & \"c\"\n\u2028 é")}, Source: Source{Kind: "user"}}),
		New(TypePermissionDecision, PermissionDecision{CallID: "c", Tool: "bash", Decision: "allow", By: "mode"}),
		{Type: "x/y", Seq: 3, Time: 4, Data: json.RawMessage(`{"a":1}`), SourceEventSeqs: []int64{1, 2}},
		{Type: "x/<z>", Seq: 5},
	}
	for i, ev := range evs {
		ev.Seq = int64(i + 10)
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ev.AppendJSON(nil)
		if err != nil || string(got) != string(want) {
			t.Fatalf("event %d:\n got %s\nwant %s (%v)", i, got, want, err)
		}
	}
	// A hand-made event whose data holds a line break is compacted.
	ev := Event{Type: "t", Data: json.RawMessage("{\n\"a\": 1\n}")}
	got, _ := ev.AppendJSON(nil)
	if string(got) != `{"type":"t","seq":0,"time":0,"data":{"a":1}}` {
		t.Fatalf("line break not compacted: %s", got)
	}
	if (Event{Type: "t", Data: json.RawMessage(`{bad`)}).Validate() == nil || (Event{}).Validate() == nil {
		t.Fatal("Validate accepted a bad event")
	}
}
