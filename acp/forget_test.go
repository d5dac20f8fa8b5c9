package acp

import (
	"fmt"
	"testing"
	"time"
)

// A closed session's state leaves the connection once its updates are out
// (an editor that opens and closes sessions for days holds only the open
// ones); loading it again makes a new state, which a later close drops too.
func TestClosedSessionStateIsDropped(t *testing.T) {
	cwd := t.TempDir()
	forgot := make(chan string, 4)
	c := startRaw(t, hopts{cwd: cwd, onForget: func(id string) { forgot <- id }})
	c.send(rawInit)
	c.response(`"init"`)
	sid := c.newRawSession("1", cwd)
	c.send(promptFrame("2", "session/prompt", sid, "hi"))
	if m := c.response("2"); stopReason(m) != "end_turn" {
		t.Fatalf("prompt: %v", m)
	}
	for round := 0; round < 2; round++ {
		id := fmt.Sprintf(`"close-%d"`, round)
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"session/close","params":{"sessionId":%q}}`+"\n", id, sid))
		if m := c.response(id); m["error"] != nil {
			t.Fatalf("session/close: %v", m)
		}
		select {
		case got := <-forgot:
			if got != sid {
				t.Fatalf("forgot %s, want %s", got, sid)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the closed session's state was never dropped")
		}
		id = fmt.Sprintf(`"load-%d"`, round)
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"session/load","params":{"sessionId":%q,"cwd":%q,"mcpServers":[]}}`+"\n", id, sid, cwd))
		if m := c.response(id); m["error"] != nil {
			t.Fatalf("session/load after close: %v", m)
		}
	}
	select {
	case id := <-forgot:
		t.Fatalf("an open session's state was dropped: %s", id)
	default:
	}
}
