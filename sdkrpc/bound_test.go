package sdkrpc

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
)

// A 12 MiB write's tool/call is forwarded under the frame bound, its other
// fields intact; an ordinary event is forwarded byte for byte.
func TestBoundEvent(t *testing.T) {
	args, _ := json.Marshal(map[string]string{"file_path": "big.txt", "content": strings.Repeat("x", 12<<20)})
	ev := event.New(event.TypeToolCall, event.ToolCall{CallID: "c1", Name: "write", Arguments: string(args)})
	got := boundEvent(ev)
	if len(got.Data) > maxEventData {
		t.Fatalf("bounded data is %d bytes", len(got.Data))
	}
	tc, err := event.Decode[event.ToolCall](got)
	if err != nil || tc.CallID != "c1" || tc.Name != "write" || !strings.Contains(tc.Arguments, "more bytes not forwarded") {
		t.Errorf("bounded tool/call = %+v, %v", tc, err)
	}
	small := event.New(event.TypeToolCall, event.ToolCall{CallID: "c2", Name: "read", Arguments: `{"file_path":"a"}`})
	if got := boundEvent(small); string(got.Data) != string(small.Data) {
		t.Errorf("a small event changed: %s", got.Data)
	}
}
