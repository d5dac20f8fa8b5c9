package subagent

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func TestUpdateFilter(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`,
		``,
		`{"jsonrpc":"2.0","id":7,"method":"session/update","params":{}}`, // a request, not ours
		`not json but mentions "session/update"`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s2","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"t"}}}}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`, // last line without newline
	}, "\n")
	var got []string
	f := newUpdateFilter(strings.NewReader(in), func(sid string, u json.RawMessage) {
		got = append(got, sid+":"+agentText(u))
	})
	out, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}` + "\n\n" +
		`{"jsonrpc":"2.0","id":7,"method":"session/update","params":{}}` + "\n" +
		`not json but mentions "session/update"` + "\n" +
		`{"jsonrpc":"2.0","id":2,"result":{}}`
	if string(out) != want {
		t.Fatalf("passed through:\n%s\nwant:\n%s", out, want)
	}
	if strings.Join(got, ",") != "s1:a,s2:" {
		t.Fatalf("updates %v", got)
	}

	huge := strings.NewReader(strings.Repeat("x", maxFrame+10) + "\n")
	if _, err := io.ReadAll(newUpdateFilter(huge, func(string, json.RawMessage) {})); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("oversized frame: %v", err)
	}
}
