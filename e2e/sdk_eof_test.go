package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// sdkPipe runs `dsh sdk` on lines written in one write and closed at once
// (printf '...' | dsh sdk), and returns the responses by id and the
// session.event types in the order they came.
func sdkPipe(t *testing.T, w *world, lines ...string) (map[string]map[string]json.RawMessage, []string, string) {
	t.Helper()
	r := w.run(strings.NewReader(strings.Join(lines, "\n")+"\n"), "sdk")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	resp := map[string]map[string]json.RawMessage{}
	var events []string
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if line == "" {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line %q: %v", line, err)
		}
		if id, ok := m["id"]; ok {
			if _, dup := resp[string(id)]; dup {
				t.Fatalf("id %s answered twice:\n%s", id, r.Stdout)
			}
			resp[string(id)] = m
			events = append(events, "response "+string(id))
			continue
		}
		var n struct {
			Method string
			Params struct {
				Event struct{ Type string }
			}
		}
		_ = json.Unmarshal([]byte(line), &n)
		if n.Method == "session.event" {
			events = append(events, n.Params.Event.Type)
		}
	}
	return resp, events, r.Stdout
}

const (
	pipeInit     = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"cwd":"CWD","provider":"scripted","model":"m"}}`
	pipePrompt   = `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"session-pipe","contentBlocks":[{"type":"text","text":"hi"}]}}`
	pipeShutdown = `{"jsonrpc":"2.0","id":3,"method":"shutdown"}`
)

func pipeWorld(t *testing.T) (*world, string) {
	w := newWorld(t)
	w.Env = append(w.Env, w.scriptEnv(`{"steps":[{"text":"hello"}],"repeat":"last"}`)...)
	return w, strings.ReplaceAll(pipeInit, "CWD", w.Cwd)
}

// TestSDKPipedInitializeShutdown: initialize and shutdown in one write,
// then EOF: both are answered and dsh exits 0 (it wrote nothing before).
func TestSDKPipedInitializeShutdown(t *testing.T) {
	w, initLine := pipeWorld(t)
	for i := 0; i < 5; i++ {
		resp, order, out := sdkPipe(t, w, initLine, pipeShutdown)
		if _, ok := resp["1"]["result"]; !ok {
			t.Fatalf("run %d: initialize not answered:\n%s", i, out)
		}
		if string(resp["3"]["result"]) != "{}" {
			t.Fatalf("run %d: shutdown not answered {}:\n%s", i, out)
		}
		if strings.Join(order, ",") != "response 1,response 3" {
			t.Fatalf("run %d: answers in order %q, want the order they were written:\n%s", i, order, out)
		}
	}
}

// TestSDKPipedPromptBeforeShutdown: a prompt written between initialize
// and shutdown is handled after the initialize (not refused as
// uninitialized) and before the shutdown, its receipt before its answer.
func TestSDKPipedPromptBeforeShutdown(t *testing.T) {
	w, initLine := pipeWorld(t)
	for i := 0; i < 5; i++ {
		resp, events, out := sdkPipe(t, w, initLine, pipePrompt, pipeShutdown)
		if _, ok := resp["2"]["result"]; !ok {
			t.Fatalf("run %d: prompt not answered with a result:\n%s", i, out)
		}
		if _, ok := resp["1"]["result"]; !ok || string(resp["3"]["result"]) != "{}" {
			t.Fatalf("run %d: initialize or shutdown not answered:\n%s", i, out)
		}
		receipt := -1
		for j, e := range events {
			if e == "agent/inbox/spliced" && receipt < 0 {
				receipt = j
			}
			if e == "response 2" && (receipt < 0 || receipt > j) {
				t.Fatalf("run %d: the prompt's answer overtook its receipt: %v", i, events)
			}
		}
	}
}

// TestSDKPipedInitializeAlone: initialize then EOF is answered, exit 0.
func TestSDKPipedInitializeAlone(t *testing.T) {
	w, initLine := pipeWorld(t)
	for i := 0; i < 5; i++ {
		resp, _, out := sdkPipe(t, w, initLine)
		if _, ok := resp["1"]["result"]; !ok {
			t.Fatalf("run %d: initialize not answered:\n%s", i, out)
		}
	}
}

// TestSDKPipedPromptAtEOF: a prompt read before EOF is answered (the
// session is then disposed).
func TestSDKPipedPromptAtEOF(t *testing.T) {
	w, initLine := pipeWorld(t)
	resp, _, out := sdkPipe(t, w, initLine, pipePrompt)
	if _, ok := resp["2"]["result"]; !ok {
		t.Fatalf("prompt not answered:\n%s", out)
	}
}

// TestSDKPipedAfterShutdown: requests read after a shutdown are answered
// too: a second shutdown {}, a prompt or initialize the documented error.
func TestSDKPipedAfterShutdown(t *testing.T) {
	w, initLine := pipeWorld(t)
	late := strings.Replace(pipePrompt, `"id":2`, `"id":5`, 1)
	again := strings.Replace(pipeShutdown, `"id":3`, `"id":4`, 1)
	resp, _, out := sdkPipe(t, w, initLine, pipeShutdown, again, late)
	if string(resp["3"]["result"]) != "{}" || string(resp["4"]["result"]) != "{}" {
		t.Fatalf("racing shutdowns not both answered:\n%s", out)
	}
	var e struct {
		Code    int
		Message string
	}
	if err := json.Unmarshal(resp["5"]["error"], &e); err != nil || e.Message != "SDK server is shutting down" {
		t.Fatalf("late prompt answered %s, want the shutting-down error:\n%s", resp["5"]["error"], out)
	}
}

// TestSDKPipedCloseAfterPrompt: a session/close written after a prompt acts
// on the session that prompt made (requests are handled in the order they
// were written), even with a turn waiting to ask the host a question, and
// both are answered before the exit.
func TestSDKPipedCloseAfterPrompt(t *testing.T) {
	w := newWorld(t)
	w.Env = append(w.Env, "DSH_PERMISSION_MODE=ask")
	w.Env = append(w.Env, w.scriptEnv(`{"steps":[{"toolCalls":[{"name":"bash","arguments":{"command":"echo hi"}}]},{"text":"done"}]}`)...)
	initLine := strings.ReplaceAll(strings.Replace(pipeInit, `"model":"m"`, `"model":"m","capabilities":{"permissions":true}`, 1), "CWD", w.Cwd)
	closeLine := `{"jsonrpc":"2.0","id":4,"method":"session/close","params":{"sessionId":"session-pipe"}}`
	resp, _, out := sdkPipe(t, w, initLine, pipePrompt, closeLine)
	if _, ok := resp["2"]["result"]; !ok {
		t.Fatalf("prompt not answered:\n%s", out)
	}
	if string(resp["4"]["result"]) != "{}" {
		t.Fatalf("session/close not answered {}:\n%s", out)
	}
}
