package e2e

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/store"
)

// The bad-input suite: one table of hostile inputs across the doors. Every
// row sends something no well-behaved client would and checks that it gets
// a clear error (or the protocol's documented silence), that the process
// keeps serving where the protocol allows, and that nothing is lost. After
// the table, every stored session must replay, every log line must be valid
// UTF-8 JSON, and nothing may have been written outside the session root
// and the workspace.

// badRow is one hostile input. door names the door it targets; run sends
// the input through the fixture and checks the answer.
type badRow struct {
	door string // "sdk" | "run" (the lead adds "acp")
	name string
	run  func(t *testing.T, f *badFixture)
}

// badScript answers quickly by default; "slow-task" conversations run a
// long bash command (a marker in its command line tells it apart), so that
// signals and a second writer land mid-turn.
func badScript(marker string) string {
	return `{"repeat":"last","steps":[{"text":"ok"}],
 "conversations":[
  {"match":"slow-task","repeat":"cycle","steps":[
    {"toolCalls":[{"name":"bash","arguments":{"command":"sleep 30; echo ` + marker + `","description":"wait"}}]},
    {"text":"slow done"}]}]}`
}

// badFixture is the state the rows share: one world, and one `dsh sdk`
// that every sdk row talks to unless it needs a process of its own.
type badFixture struct {
	w        *world
	base     string
	fixtures string // files the rows make on purpose (not a leak)
	marker   string
	sdk      *badSDK
	escape   string // a path outside the world that traversal ids aim at
	// leased is a session live in the shared process.
	leased string
}

// badRows is the table. The sdk rows run in order against the shared
// process: the initialize rows first (it is not initialized yet).
func badRows() []badRow {
	prompt := func(id string, blocks ...string) string {
		if len(blocks) == 0 {
			blocks = []string{`{"type":"text","text":"hello"}`}
		}
		return `{"sessionId":` + badJSON(id) + `,"contentBlocks":[` + strings.Join(blocks, ",") + `]}`
	}
	rows := []badRow{
		// --- sdk: before initialize -------------------------------------
		{"sdk", "prompt before initialize", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "session/prompt", prompt("early")), -32603, "SDK server is not initialized")
		}},
		{"sdk", "initialize maxTokens is a string", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "initialize", `{"maxTokens":"100"}`), -32603, "initialize maxTokens must be a positive safe integer")
		}},
		{"sdk", "initialize maxTokens is negative", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "initialize", `{"maxTokens":-1}`), -32603, "initialize maxTokens must be a positive safe integer")
		}},
		{"sdk", "initialize maxTokens is fractional", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "initialize", `{"maxTokens":1.5}`), -32603, "initialize maxTokens must be a positive safe integer")
		}},
		{"sdk", "initialize maxTokens is beyond 2^53", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "initialize", `{"maxTokens":9007199254740993}`), -32603, "initialize maxTokens must be a positive safe integer")
		}},
		{"sdk", "initialize reasoningEffort is a number", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "initialize", `{"reasoningEffort":3}`), -32603, "initialize reasoningEffort must be a non-empty string")
		}},
		{"sdk", "initialize reasoningEffort is unsupported", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "initialize", `{"provider":"scripted","reasoningEffort":"turbo"}`), -32603, `does not support reasoning effort "turbo"`)
		}},
		{"sdk", "initialize unknown provider", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "initialize", `{"provider":"../../bin/sh"}`), -32603, `no adapter registered for provider "../../bin/sh"`)
		}},
		{"sdk", "initialize cwd is a number", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "initialize", `{"cwd":42}`), -32603, "initialize cwd must be a string")
		}},
		{"sdk", "initialize capabilities is an array", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "initialize", `{"capabilities":[]}`), -32603, "initialize capabilities must be an object")
		}},
		{"sdk", "initialize params is an array (read as {})", func(t *testing.T, f *badFixture) {
			// The original hands non-object params to handlers as {}: this
			// initialize succeeds with the defaults (scripted, the process cwd).
			fr := f.sdk.call(t, "initialize", `[1,2,3]`)
			if fr.Error != nil || !strings.Contains(string(fr.Result), "deepseek-harness-sdk-runtime") {
				t.Fatalf("initialize: %s", fr.raw)
			}
		}},
		{"sdk", "initialize twice", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "initialize", `{}`), -32603, "SDK server is already initialized")
		}},

		// --- sdk: framing ---------------------------------------------------
		{"sdk", "malformed JSON line is ignored", func(t *testing.T, f *badFixture) {
			f.sdk.silent(t, `{"jsonrpc":"2.0","id":"m1","method":"initialize",`)
		}},
		{"sdk", "array (batch) line is ignored", func(t *testing.T, f *badFixture) {
			f.sdk.silent(t, `[{"jsonrpc":"2.0","id":"b1","method":"shutdown"}]`)
		}},
		{"sdk", "scalar line is ignored", func(t *testing.T, f *badFixture) {
			f.sdk.silent(t, `"shutdown"`)
		}},
		{"sdk", "unusable request ids are ignored", func(t *testing.T, f *badFixture) {
			f.sdk.silent(t,
				`{"jsonrpc":"2.0","id":-1,"method":"shutdown"}`,
				`{"jsonrpc":"2.0","id":1.5,"method":"shutdown"}`,
				`{"jsonrpc":"2.0","id":true,"method":"shutdown"}`,
				`{"jsonrpc":"2.0","id":{"a":1},"method":"shutdown"}`)
		}},
		{"sdk", "nesting 20000 deep is ignored", func(t *testing.T, f *badFixture) {
			f.sdk.silent(t, `{"jsonrpc":"2.0","id":"deep","method":"x","params":`+strings.Repeat("[", 20000)+strings.Repeat("]", 20000)+`}`)
		}},
		{"sdk", "NUL and control bytes outside strings are ignored", func(t *testing.T, f *badFixture) {
			f.sdk.silent(t, "{\"jsonrpc\":\"2.0\",\x00\"id\":\"nul\",\"method\":\"shutdown\"}", "\x01\x02\x1b[2J")
		}},
		{"sdk", "method and result together are ignored", func(t *testing.T, f *badFixture) {
			f.sdk.silent(t, `{"jsonrpc":"2.0","id":"mr","method":"shutdown","result":{}}`)
		}},
		{"sdk", "BOM and CRLF around a request", func(t *testing.T, f *badFixture) {
			f.sdk.send("\xef\xbb\xbf" + `{"jsonrpc":"2.0","id":"bom","method":"session/cancel","params":{"sessionId":"nope"}}` + "\r")
			badWantErr(t, f.sdk.response(t, `"bom"`), -32603, "unknown session: nope")
		}},
		{"sdk", "unknown method", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "session/delete_everything", `{}`), -32603, "unknown DeepSeek Harness SDK runtime method: session/delete_everything")
		}},
		{"sdk", "unknown notification is ignored", func(t *testing.T, f *badFixture) {
			f.sdk.silent(t, `{"jsonrpc":"2.0","method":"session/delete_everything","params":{"sessionId":"notif"}}`)
		}},
		{"sdk", "prompt sent as a notification runs unanswered", func(t *testing.T, f *badFixture) {
			// The original's transport hands notifications to the method's
			// handler, so a prompt without an id is queued like any other;
			// only its answer is dropped.
			from := f.sdk.mark()
			f.sdk.silent(t, `{"jsonrpc":"2.0","method":"session/prompt","params":`+prompt("notified")+`}`)
			f.sdk.idle(t, from, "notified")
			if ends := pxTurnEnds(t, badLog(t, f, "notified")); len(ends) != 1 || ends[0] != event.ReasonCompleted {
				t.Fatalf("turns ended %v", ends)
			}
		}},
		{"sdk", "response to a request never made is ignored", func(t *testing.T, f *badFixture) {
			f.sdk.silent(t, `{"jsonrpc":"2.0","id":"never-asked","result":{"outcome":{"outcome":"selected","optionId":"allow_always"}}}`,
				`{"jsonrpc":"2.0","id":7,"error":{"code":"x","message":5}}`)
		}},
		{"sdk", "invalid UTF-8 in the method name", func(t *testing.T, f *badFixture) {
			f.sdk.send(`{"jsonrpc":"2.0","id":"utf","method":"ses` + "\xff\xfe" + `sion/prompt"}`)
			badWantErr(t, f.sdk.response(t, `"utf"`), -32603, "unknown DeepSeek Harness SDK runtime method: ses\uFFFD\uFFFDsion/prompt")
		}},
		{"sdk", "duplicate request ids are both answered", func(t *testing.T, f *badFixture) {
			from := f.sdk.mark()
			line := `{"jsonrpc":"2.0","id":"dup","method":"session/prompt","params":` + prompt("dup-session") + `}`
			f.sdk.send(line, line)
			var ids []string
			for _, fr := range f.sdk.waitN(t, from, 2, func(fr badFrame) bool { return string(fr.ID) == `"dup"` && fr.Method == "" }) {
				var r struct {
					MessageID string `json:"messageId"`
				}
				if fr.Error != nil || json.Unmarshal(fr.Result, &r) != nil || r.MessageID == "" {
					t.Fatalf("duplicate id answer: %s", fr.raw)
				}
				ids = append(ids, r.MessageID)
			}
			if ids[0] == ids[1] {
				t.Fatalf("both prompts got message id %s", ids[0])
			}
			f.sdk.idle(t, from, "dup-session")
			users := 0
			for _, ev := range badLog(t, f, "dup-session") {
				if ev.Type == event.TypeUserMessage {
					users++
				}
			}
			if users != 2 {
				t.Fatalf("%d user messages logged for two prompts", users)
			}
		}},

		// --- sdk: wrong types and unknown ids -------------------------------
		{"sdk", "sessionId is a number", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "session/prompt", `{"sessionId":7,"contentBlocks":[]}`), -32603, "session/prompt sessionId must be a non-empty string")
		}},
		{"sdk", "sessionId is empty", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "session/prompt", `{"sessionId":"","contentBlocks":[]}`), -32603, "session/prompt sessionId must be a non-empty string")
		}},
		{"sdk", "prompt params are a string (read as {})", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "session/prompt", `"hello"`), -32603, "session/prompt sessionId must be a non-empty string")
		}},
		{"sdk", "contentBlocks is an object", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "session/prompt", `{"sessionId":"s","contentBlocks":{"type":"text"}}`), -32603, "session/prompt contentBlocks must be an array")
		}},
		{"sdk", "contentBlocks is empty", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "session/prompt", `{"sessionId":"empty-blocks","contentBlocks":[]}`), -32603, "session/prompt contentBlocks must not be empty")
		}},
		{"sdk", "content block is not an object", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "session/prompt", prompt("s", `"hello"`)), -32603, "contentBlocks[0]: a content block must be an object with a string type")
		}},
		{"sdk", "content block of an unknown type", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "session/prompt", prompt("s", `{"type":"text","text":"ok"}`, `{"type":"audio","data":"AAAA"}`)), -32603, `contentBlocks[1]: block type "audio" is not accepted`)
		}},
		{"sdk", "text block with a number", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "session/prompt", prompt("s", `{"type":"text","text":5}`)), -32603, "a text block needs a string text")
		}},
		{"sdk", "image with non-canonical base64", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "session/prompt", prompt("s", `{"type":"image","data":"iVBO\nRw0K","mimeType":"image/png"}`)), -32603, "image data must be canonical base64")
		}},
		{"sdk", "image of an unsupported type", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "session/prompt", prompt("s", `{"type":"image","data":"AAAA","mimeType":"image/svg+xml"}`)), -32603, `image mimeType "image/svg+xml" is not supported`)
		}},
		{"sdk", "cancel of an unknown session", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "session/cancel", `{"sessionId":"no-such-session"}`), -32603, "unknown session: no-such-session")
		}},
		{"sdk", "close of an unknown session", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "session/close", `{"sessionId":"no-such-session"}`), -32603, "unknown session: no-such-session")
		}},
		{"sdk", "cancel without a sessionId", func(t *testing.T, f *badFixture) {
			badWantErr(t, f.sdk.call(t, "session/cancel", `{"session":"x"}`), -32603, "session/cancel sessionId must be a non-empty string")
		}},

		// --- sdk: session ids that try to leave the session root ------------
		{"sdk", "sessionId ../x", func(t *testing.T, f *badFixture) { f.storedUnderRoot(t, "../x") }},
		{"sdk", "sessionId climbing out of the world", func(t *testing.T, f *badFixture) { f.storedUnderRoot(t, f.escape) }},
		{"sdk", "sessionId /etc/passwd", func(t *testing.T, f *badFixture) { f.storedUnderRoot(t, "/etc/passwd") }},
		{"sdk", "sessionId . and ..", func(t *testing.T, f *badFixture) {
			f.storedUnderRoot(t, ".")
			f.storedUnderRoot(t, "..")
		}},
		{"sdk", "sessionId with NUL", func(t *testing.T, f *badFixture) { f.storedUnderRoot(t, "a\x00b/../../c") }},
		{"sdk", "sessionId with newline and escapes", func(t *testing.T, f *badFixture) {
			f.storedUnderRoot(t, "line\nbreak\r\x1b[31m\u202etxt.exe")
		}},
		{"sdk", "sessionId of 4096 characters", func(t *testing.T, f *badFixture) {
			f.storedUnderRoot(t, strings.Repeat("../", 1365)+"x")
		}},
		{"sdk", "sessionId with invalid UTF-8 (read as U+FFFD)", func(t *testing.T, f *badFixture) {
			from := f.sdk.mark()
			f.sdk.send(`{"jsonrpc":"2.0","id":"badutf","method":"session/prompt","params":{"sessionId":"bad` + "\xff" + `id","contentBlocks":[{"type":"text","text":"hi"}]}}`)
			fr := f.sdk.response(t, `"badutf"`)
			if fr.Error != nil {
				t.Fatalf("prompt: %s", fr.raw)
			}
			f.sdk.idle(t, from, "bad\uFFFDid")
			badLog(t, f, "bad\uFFFDid")
		}},

		// --- sdk: payloads ----------------------------------------------------
		{"sdk", "prompt text with invalid UTF-8", func(t *testing.T, f *badFixture) {
			from := f.sdk.mark()
			f.sdk.send(`{"jsonrpc":"2.0","id":"badtext","method":"session/prompt","params":{"sessionId":"bad-text","contentBlocks":[{"type":"text","text":"a` + "\xc3\x28\xff" + `b"}]}}`)
			if fr := f.sdk.response(t, `"badtext"`); fr.Error != nil {
				t.Fatalf("prompt: %s", fr.raw)
			}
			f.sdk.idle(t, from, "bad-text")
			badLog(t, f, "bad-text")
		}},
		{"sdk", "frame over 64 MiB", func(t *testing.T, f *badFixture) {
			from := f.sdk.mark()
			line := `{"jsonrpc":"2.0","id":"huge","method":"session/prompt","params":{"sessionId":"huge","contentBlocks":[{"type":"text","text":"` +
				strings.Repeat("x", 64<<20) + `"}]}}`
			f.sdk.send(line)
			fr := f.sdk.waitN(t, from, 1, func(fr badFrame) bool { return string(fr.ID) == "null" })[0]
			badWantErr(t, fr, -32600, fmt.Sprintf("frame of %d bytes exceeds the %d-byte limit", len(line), 64<<20))
			f.sdk.probe(t)
			if _, err := store.New(f.w.Root).Dir("huge"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the oversized prompt reached a session (%v)", err)
			}
			// The line is buffered up to the limit (it cannot be known to be
			// too long before), then discarded without being kept: memory
			// stays within a few times the limit, whatever the line's size.
			hwm := badHWM(t, f.sdk.cmd.Process.Pid)
			t.Logf("peak RSS %.0f MiB after a frame of %d MiB", hwm, len(line)>>20)
			if hwm > 5*64*raceMemFactor {
				t.Errorf("peak RSS %.0f MiB for one oversized frame", hwm)
			}
		}},
		{"sdk", "prompt of 8 MiB", func(t *testing.T, f *badFixture) {
			from := f.sdk.mark()
			f.sdk.send(`{"jsonrpc":"2.0","id":"big","method":"session/prompt","params":` + prompt("big-prompt", `{"type":"text","text":"`+strings.Repeat("big ", 2<<20)+`"}`) + `}`)
			if fr := f.sdk.response(t, `"big"`); fr.Error != nil {
				t.Fatalf("prompt: %.300s", fr.raw)
			}
			f.sdk.idle(t, from, "big-prompt")
			badLog(t, f, "big-prompt")
			t.Logf("peak RSS %.0f MiB after an 8 MiB prompt", badHWM(t, f.sdk.cmd.Process.Pid))
		}},
		{"sdk", "prompt to a session another process is writing", func(t *testing.T, f *badFixture) {
			other := f.freshSDK(t)
			from := other.mark()
			if fr := other.call(t, "session/prompt", prompt("leased-elsewhere", `{"type":"text","text":"slow-task"}`)); fr.Error != nil {
				t.Fatalf("prompt: %s", fr.raw)
			}
			other.waitN(t, from, 1, badIsEvent("leased-elsewhere", event.TypeToolCall))
			badWantErr(t, f.sdk.call(t, "session/prompt", prompt("leased-elsewhere")), -32603, `session "leased-elsewhere" is open for writing in another process`)
			other.shutdown(t)
			badTurnsClosed(t, badLog(t, f, "leased-elsewhere"), event.ReasonAborted)
			badNoChild(t, f.marker)
		}},
		{"sdk", "a session stays live for the run rows", func(t *testing.T, f *badFixture) {
			from := f.sdk.mark()
			if fr := f.sdk.call(t, "session/prompt", prompt(f.leased)); fr.Error != nil {
				t.Fatalf("prompt: %s", fr.raw)
			}
			f.sdk.idle(t, from, f.leased)
		}},

		// --- sdk: processes of their own -------------------------------------
		{"sdk", "relative cwd is made absolute", func(t *testing.T, f *badFixture) {
			if err := os.MkdirAll(filepath.Join(f.w.Cwd, "sub", "dir"), 0o755); err != nil {
				t.Fatal(err)
			}
			p := f.startSDK(t)
			if fr := p.call(t, "initialize", `{"provider":"scripted","cwd":"sub/dir"}`); fr.Error != nil {
				t.Fatalf("initialize: %s", fr.raw)
			}
			from := p.mark()
			if fr := p.call(t, "session/prompt", prompt("relative-cwd")); fr.Error != nil {
				t.Fatalf("prompt: %s", fr.raw)
			}
			p.idle(t, from, "relative-cwd")
			h, err := store.New(f.w.Root).ReadHeader("relative-cwd")
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(f.w.Cwd, "sub", "dir"); h.Cwd != want {
				t.Fatalf("header cwd %q, want %q", h.Cwd, want)
			}
			p.shutdown(t)
		}},
		{"sdk", "requests after shutdown", func(t *testing.T, f *badFixture) {
			p := f.freshSDK(t)
			from := p.mark()
			p.send(`{"jsonrpc":"2.0","id":"sd","method":"shutdown"}`,
				`{"jsonrpc":"2.0","id":"late","method":"session/prompt","params":`+prompt("after-shutdown")+`}`)
			if fr := p.response(t, `"sd"`); fr.Error != nil || string(fr.Result) != "{}" {
				t.Fatalf("shutdown: %s", fr.raw)
			}
			if code := p.exit(t); code != 0 {
				t.Fatalf("exit %d after shutdown", code)
			}
			for _, fr := range p.since(from) {
				if string(fr.ID) == `"late"` {
					badWantErr(t, fr, -32603, "SDK server is shutting down")
				}
			}
			if _, err := store.New(f.w.Root).Dir("after-shutdown"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("a prompt after shutdown created a session (%v)", err)
			}
		}},
		{"sdk", "racing shutdowns", func(t *testing.T, f *badFixture) {
			p := f.freshSDK(t)
			p.send(`{"jsonrpc":"2.0","id":"sd1","method":"shutdown"}`, `{"jsonrpc":"2.0","id":"sd2","method":"shutdown"}`)
			for _, id := range []string{`"sd1"`, `"sd2"`} {
				if fr := p.response(t, id); fr.Error != nil || string(fr.Result) != "{}" {
					t.Fatalf("shutdown %s: %s", id, fr.raw)
				}
			}
			if code := p.exit(t); code != 0 {
				t.Fatalf("exit %d", code)
			}
		}},
		{"sdk", "SIGTERM mid-turn", func(t *testing.T, f *badFixture) { f.sdkSignal(t, syscall.SIGTERM, 0) }},
		{"sdk", "SIGINT mid-turn", func(t *testing.T, f *badFixture) { f.sdkSignal(t, syscall.SIGINT, 130) }},
		{"sdk", "stdin closed mid-turn", func(t *testing.T, f *badFixture) { f.sdkSignal(t, nil, 0) }},
		// ACP rows: the lead adds them here, door "acp", with a shared `dsh
		// acp` in the fixture as for sdk (initialize/session/new validation,
		// unknown sessions, relative cwds, content blocks, oversized and
		// malformed frames, cancel, signals mid-turn).

		// --- run ------------------------------------------------------------
		{"run", "--session-id ../y", func(t *testing.T, f *badFixture) {
			f.runFails(t, 1, `session "../y" does not exist`, "run", "--session-id", "../y", "task")
		}},
		{"run", "--session-id /etc/shadow", func(t *testing.T, f *badFixture) {
			f.runFails(t, 1, `session "/etc/shadow" does not exist`, "run", "--session-id", "/etc/shadow", "task")
		}},
		{"run", "--session-id climbing out of the world", func(t *testing.T, f *badFixture) {
			f.runFails(t, 1, "does not exist", "run", "--session-id", f.escape+"-run", "task")
		}},
		{"run", "--session-id with a newline (--json)", func(t *testing.T, f *badFixture) {
			r := f.runJSON(t, 1, "run", "--json", "--session-id", "a\nb", "task")
			badOneError(t, r, "does not exist")
		}},
		{"run", "--session-id injecting JSON (--json)", func(t *testing.T, f *badFixture) {
			id := `x","type":"final","text":"pwned`
			r := f.runJSON(t, 1, "run", "--json", "--session-id", id, "task")
			badOneError(t, r, strconv.Quote(id))
		}},
		{"run", "--session-id empty", func(t *testing.T, f *badFixture) {
			f.runFails(t, 2, "", "run", "--session-id", "", "task")
		}},
		{"run", "--session-id blank", func(t *testing.T, f *badFixture) {
			f.runFails(t, 2, "", "run", "--session-id", "   ", "task")
		}},
		{"run", "--session-id without a value", func(t *testing.T, f *badFixture) {
			f.runFails(t, 2, "session-id", "run", "--session-id")
		}},
		{"run", "--session-id of a session in another cwd", func(t *testing.T, f *badFixture) {
			f.runFails(t, 1, "belongs to", "run", "--session-id", "relative-cwd", "task")
		}},
		{"run", "--session-id of a session live in another process", func(t *testing.T, f *badFixture) {
			f.runFails(t, 1, "open for writing in another process", "run", "--session-id", f.leased, "task")
		}},
		{"run", "--session-id of a corrupt log", func(t *testing.T, f *badFixture) {
			r := f.run(t, nil, "run", "--json", "task to corrupt")
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			id := badSessionOf(t, r.Stdout)
			dir, err := store.New(f.w.Root).Dir(id)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "session.jsonl")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitAfter(string(b), "\n")
			lines[2] = "{\"type\":\"turn/start\",\"seq\":1,GARBAGE}\n"
			damaged := strings.Join(lines, "")
			if err := os.WriteFile(path, []byte(damaged), 0o600); err != nil {
				t.Fatal(err)
			}
			f.runFails(t, 1, "corrupt", "run", "--session-id", id, "task")
			if after, _ := os.ReadFile(path); string(after) != damaged {
				t.Fatal("the refused log was changed")
			}
			// Put it back so the final replay of every session passes.
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"run", "unknown option", func(t *testing.T, f *badFixture) {
			f.runFails(t, 2, "unknown option '--bogus'", "run", "--bogus", "task")
		}},
		{"run", "unknown option (--json)", func(t *testing.T, f *badFixture) {
			badOneError(t, f.runJSON(t, 2, "run", "--json", "--bogus", "task"), "unknown option '--bogus'")
		}},
		{"run", "negative --max-tokens", func(t *testing.T, f *badFixture) {
			f.runFails(t, 2, "max-tokens", "run", "--max-tokens", "-5", "task")
		}},
		{"run", "unknown --permission-mode", func(t *testing.T, f *badFixture) {
			f.runFails(t, 2, `unknown permission mode "yolo"`, "run", "--permission-mode", "yolo", "task")
		}},
		{"run", "DSH_STEP_CAP is not a number", func(t *testing.T, f *badFixture) {
			f.runFails(t, 2, `DSH_STEP_CAP="many"`, "run", "task", "\x00env:DSH_STEP_CAP=many")
		}},
		{"run", "--context-window 0", func(t *testing.T, f *badFixture) {
			f.runFails(t, 2, `context window "0" from flag --context-window is not a context window`, "run", "--context-window", "0", "task")
		}},
		{"run", "DSH_CONTEXT_WINDOW negative", func(t *testing.T, f *badFixture) {
			f.runFails(t, 2, `context window "-5" from environment DSH_CONTEXT_WINDOW is not`, "run", "task", "\x00env:DSH_CONTEXT_WINDOW=-5")
		}},
		{"run", "DSH_CONTEXT_WINDOW not a number", func(t *testing.T, f *badFixture) {
			f.runFails(t, 2, `context window "lots" from environment DSH_CONTEXT_WINDOW is not`, "run", "task", "\x00env:DSH_CONTEXT_WINDOW=lots")
		}},
		{"run", "config contextWindow not a number", func(t *testing.T, f *badFixture) {
			path := filepath.Join(f.fixtures, "bad-window.json")
			if err := os.WriteFile(path, []byte(`{"contextWindow":"big"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			f.runFails(t, 2, "contextWindow", "run", "--config", path, "task")
		}},
		{"run", "config compactAt above 1", func(t *testing.T, f *badFixture) {
			path := filepath.Join(f.fixtures, "bad-compact.json")
			if err := os.WriteFile(path, []byte(`{"compactAt":1.5}`), 0o644); err != nil {
				t.Fatal(err)
			}
			f.runFails(t, 2, `compactAt "1.5" from config key compactAt is not a compaction threshold`, "run", "--config", path, "task")
		}},
		{"run", "unknown provider", func(t *testing.T, f *badFixture) {
			f.runFails(t, 2, `unknown provider "nope" from flag --provider (want deepseek-official, openai-compatible, scripted)`, "run", "--provider", "nope", "task")
		}},
		{"run", "malformed script", func(t *testing.T, f *badFixture) {
			path := filepath.Join(f.fixtures, "broken-script.json")
			if err := os.WriteFile(path, []byte(`{"steps":[{"text":`), 0o644); err != nil {
				t.Fatal(err)
			}
			f.runFails(t, 1, "broken-script.json", "run", "--script", path, "task")
		}},
		{"run", "missing API key", func(t *testing.T, f *badFixture) {
			f.runFails(t, 1, "DEEPSEEK_API_KEY", "run", "--provider", "deepseek-official", "--base-url", "http://127.0.0.1:9", "task")
		}},
		{"run", "blank task on stdin", func(t *testing.T, f *badFixture) {
			r := f.run(t, strings.NewReader(" \n\t\n"), "run", "-")
			if r.Code == 0 || !strings.Contains(r.Stderr, "a task is required") {
				t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
			}
		}},
		{"run", "task with invalid UTF-8 on stdin (--json)", func(t *testing.T, f *badFixture) {
			r := f.run(t, strings.NewReader("fix \xff\xfe the \xc3( bug"), "run", "--json", "-")
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			badValidLines(t, r.Stdout)
			badLog(t, f, badSessionOf(t, r.Stdout))
		}},
		{"run", "relative --session-root", func(t *testing.T, f *badFixture) {
			r := f.run(t, nil, "run", "--json", "--session-root", "rel-root", "task")
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			id := badSessionOf(t, r.Stdout)
			if _, _, err := store.New(filepath.Join(f.w.Cwd, "rel-root")).Read(id); err != nil {
				t.Fatalf("the session is not under the workspace's rel-root: %v", err)
			}
		}},
		{"run", "SIGTERM mid-turn", func(t *testing.T, f *badFixture) { f.runSignal(t, syscall.SIGTERM) }},
		{"run", "SIGINT mid-turn", func(t *testing.T, f *badFixture) { f.runSignal(t, syscall.SIGINT) }},
	}
	return rows
}

// TestBadInput runs the table, then checks that nothing was lost: the
// shared process still serves and exits cleanly, every stored session
// replays, and nothing was written outside the session root and the
// workspace.
func TestBadInput(t *testing.T) {
	var rb [6]byte
	if _, err := rand.Read(rb[:]); err != nil {
		t.Fatal(err)
	}
	marker := "dsh-bad-" + hex.EncodeToString(rb[:])
	w := newWorld(t)
	base := filepath.Dir(w.Root)
	f := &badFixture{w: w, base: base, fixtures: filepath.Join(base, "fixtures"), marker: marker, leased: "live-" + marker}
	// An id that, joined naively to any folder of the world, lands in the
	// system temp directory.
	f.escape = strings.Repeat("../", 32) + strings.TrimPrefix(filepath.Join(os.TempDir(), marker), "/")
	tmp := filepath.Join(base, "tmp")
	for _, d := range []string{f.fixtures, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(f.fixtures, "script.json")
	if err := os.WriteFile(script, []byte(badScript(marker)), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, kv := range w.Env {
		if strings.HasPrefix(kv, "TMPDIR=") {
			w.Env[i] = "TMPDIR=" + tmp
		}
	}
	w.Env = append(w.Env, "DSH_PROVIDER=scripted", "DSH_SCRIPT="+script)
	before := pxSnapshot(t, base, w.Root, w.Cwd, f.fixtures)

	f.sdk = f.startSDK(t)
	rows := badRows()
	count := map[string]int{}
	for _, r := range rows {
		count[r.door]++
		t.Run(r.door+"/"+r.name, func(t *testing.T) {
			r.run(t, f)
			if r.door == "sdk" && f.sdk.alive() {
				f.sdk.probe(t) // the shared process keeps serving
			}
		})
	}

	// Nothing lost: the shared process exits cleanly, then every session
	// replays and every log line is valid UTF-8 JSON.
	f.sdk.shutdown(t)
	f.sdk.checkFrames(t)
	infos, err := store.New(w.Root).List("")
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		badLog(t, f, info.Header.ID)
	}
	if _, err := os.Lstat(filepath.Join(os.TempDir(), marker)); err == nil {
		t.Errorf("a traversal id reached %s", filepath.Join(os.TempDir(), marker))
	}
	after := pxSnapshot(t, base, w.Root, w.Cwd, f.fixtures)
	if changed := pxChanged(before, after); len(changed) > 0 {
		t.Errorf("written outside the session root and the workspace: %v", changed)
	}
	t.Logf("BADINPUT: %d hostile inputs (%d sdk, %d run); %d sessions replayed intact; nothing written outside the session root and the workspace",
		len(rows), count["sdk"], count["run"], len(infos))
}

// ---- the fixture's doors ---------------------------------------------------

// startSDK starts a raw `dsh sdk` bound to t (killed at t's cleanup if
// still running).
func (f *badFixture) startSDK(t *testing.T) *badSDK {
	t.Helper()
	w := *f.w
	w.t = t
	cmd, stdin, stdout, errb := w.start("sdk")
	p := &badSDK{cmd: cmd, stdin: stdin, stderr: errb, changed: make(chan struct{}), exited: make(chan struct{})}
	go p.read(stdout)
	return p
}

// freshSDK is startSDK followed by a good initialize.
func (f *badFixture) freshSDK(t *testing.T) *badSDK {
	t.Helper()
	p := f.startSDK(t)
	if fr := p.call(t, "initialize", `{"provider":"scripted"}`); fr.Error != nil {
		t.Fatalf("initialize: %s", fr.raw)
	}
	return p
}

// storedUnderRoot prompts session id on the shared process and checks the
// session lives inside the session root, found again by its exact id.
func (f *badFixture) storedUnderRoot(t *testing.T, id string) {
	t.Helper()
	from := f.sdk.mark()
	params, _ := json.Marshal(map[string]any{"sessionId": id, "contentBlocks": []any{map[string]string{"type": "text", "text": "hi"}}})
	if fr := f.sdk.call(t, "session/prompt", string(params)); fr.Error != nil {
		t.Fatalf("prompt: %s", fr.raw)
	}
	f.sdk.idle(t, from, id)
	st := store.New(f.w.Root)
	dir, err := st.Dir(id)
	if err != nil {
		t.Fatalf("session %q not found by id: %v", id, err)
	}
	rel, err := filepath.Rel(f.w.Root, dir)
	if err != nil || strings.HasPrefix(rel, "..") || strings.Count(rel, string(filepath.Separator)) != 1 || len(filepath.Base(dir)) > 255 {
		t.Fatalf("session %q stored at %s, not <root>/<project>/<id>", id, dir)
	}
	if ends := pxTurnEnds(t, badLog(t, f, id)); len(ends) != 1 || ends[0] != event.ReasonCompleted {
		t.Fatalf("turns ended %v", ends)
	}
}

// sdkSignal starts a slow turn on a process of its own, then sends sig
// (nil: closes stdin) mid-tool and checks the exit code, that the turn was
// closed with a result for its call, and that the bash child is gone.
func (f *badFixture) sdkSignal(t *testing.T, sig os.Signal, wantCode int) {
	t.Helper()
	p := f.freshSDK(t)
	id := fmt.Sprintf("signal-%d-%s", wantCode, f.marker)
	if sig == nil {
		id = "eof-" + f.marker
	}
	from := p.mark()
	params, _ := json.Marshal(map[string]any{"sessionId": id, "contentBlocks": []any{map[string]string{"type": "text", "text": "slow-task"}}})
	if fr := p.call(t, "session/prompt", string(params)); fr.Error != nil {
		t.Fatalf("prompt: %s", fr.raw)
	}
	p.waitN(t, from, 1, badIsEvent(id, event.TypeToolCall))
	badWaitChild(t, f.marker)
	if sig == nil {
		p.stdin.Close()
	} else if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if code := p.exit(t); code != wantCode {
		t.Fatalf("exit %d, want %d (stderr %s)", code, wantCode, p.stderr.String())
	}
	badTurnsClosed(t, badLog(t, f, id), event.ReasonAborted)
	badNoChild(t, f.marker)
}

// runSignal sends sig to `dsh run` mid-tool: the turn ends aborted, every
// call has its result, the child is gone, the exit status is 1.
func (f *badFixture) runSignal(t *testing.T, sig os.Signal) {
	t.Helper()
	w := *f.w
	w.t = t
	cmd, stdin, stdout, errb := w.start("run", "--json", "slow-task")
	stdin.Close()
	br := bufio.NewReader(stdout)
	id := ""
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the run ended before its tool call: %v (stderr %s)", err, errb.String())
		}
		if id == "" {
			id = badSessionOf(t, line)
		}
		if strings.Contains(line, `"type":"tool_call"`) {
			break
		}
	}
	badWaitChild(t, f.marker)
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(br)
	err := cmd.Wait()
	var ee *exec.ExitError
	want := 1 // the turn ended aborted
	if sig == syscall.SIGINT {
		want = 130 // Ctrl-C, as shells expect
	}
	if !errors.As(err, &ee) || ee.ExitCode() != want {
		t.Fatalf("exit: %v, want status %d (stderr %s)", err, want, errb.String())
	}
	badValidLines(t, string(rest))
	badTurnsClosed(t, badLog(t, f, id), event.ReasonAborted)
	badNoChild(t, f.marker)
}

// run runs dsh in the world; an arg "\x00env:K=V" adds to the environment
// instead.
func (f *badFixture) run(t *testing.T, stdin io.Reader, args ...string) result {
	t.Helper()
	w := *f.w
	w.t = t
	w.Env = append([]string(nil), f.w.Env...)
	var plain []string
	for _, a := range args {
		if kv, ok := strings.CutPrefix(a, "\x00env:"); ok {
			w.Env = append(w.Env, kv)
			continue
		}
		plain = append(plain, a)
	}
	return w.run(stdin, plain...)
}

// runFails runs dsh and wants exit code code, a stderr mentioning msg (a
// "dsh: " line), nothing on stdout.
func (f *badFixture) runFails(t *testing.T, code int, msg string, args ...string) {
	t.Helper()
	r := f.run(t, nil, args...)
	if r.Code != code || !strings.Contains(r.Stderr, msg) || !strings.HasPrefix(r.Stderr, "dsh: ") {
		t.Fatalf("exit %d, stderr %q; want exit %d and a dsh: error mentioning %q", r.Code, r.Stderr, code, msg)
	}
	if r.Stdout != "" {
		t.Fatalf("stdout %q on failure", r.Stdout)
	}
}

// runJSON runs dsh --json and wants exit code code and only valid lines.
func (f *badFixture) runJSON(t *testing.T, code int, args ...string) result {
	t.Helper()
	r := f.run(t, nil, args...)
	if r.Code != code {
		t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", r.Code, code, r.Stdout, r.Stderr)
	}
	badValidLines(t, r.Stdout)
	return r
}

// ---- the raw SDK driver ------------------------------------------------------

// badSDK is `dsh sdk` over raw pipes: rows write frames no client library
// would produce and read every frame the process writes.
type badSDK struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *syncBuffer

	wmu sync.Mutex // one writer at a time, so lines never interleave

	mu      sync.Mutex
	frames  []badFrame
	changed chan struct{} // closed and replaced on each frame
	exited  chan struct{} // closed when stdout ends
	seq     int
}

// badFrame is one line the process wrote.
type badFrame struct {
	raw    string
	valid  bool
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (p *badSDK) read(stdout io.Reader) {
	defer close(p.exited)
	br := bufio.NewReaderSize(stdout, 1<<20)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			fr := badFrame{raw: strings.TrimSuffix(line, "\n")}
			fr.valid = strings.HasSuffix(line, "\n") && utf8.ValidString(line) && json.Unmarshal([]byte(fr.raw), &fr) == nil
			p.mu.Lock()
			p.frames = append(p.frames, fr)
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// send writes lines, each with one newline; big writes go aside so a full
// pipe cannot stall the test while the process answers.
func (p *badSDK) send(lines ...string) {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_, _ = p.stdin.Write(b.Bytes())
}

// mark returns the index of the next frame.
func (p *badSDK) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.frames)
}

// since returns the frames from index from on.
func (p *badSDK) since(from int) []badFrame {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]badFrame(nil), p.frames[from:]...)
}

// waitN waits for n frames from index from on that match.
func (p *badSDK) waitN(t *testing.T, from, n int, match func(badFrame) bool) []badFrame {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second * raceSlowdown)
	defer deadline.Stop()
	ended := false
	for {
		p.mu.Lock()
		var got []badFrame
		for _, fr := range p.frames[from:] {
			if fr.valid && match(fr) {
				got = append(got, fr)
			}
		}
		ch := p.changed
		p.mu.Unlock()
		if len(got) >= n {
			return got[:n]
		}
		if ended {
			t.Fatalf("the process ended before %d matching frames (stderr %s)", n, p.stderr.String())
		}
		select {
		case <-ch:
		case <-p.exited:
			ended = true // one more pass: every frame is in by now
		case <-deadline.C:
			t.Fatalf("no %d matching frames within %v; %d frames since (stderr %s)", n, 30*time.Second*raceSlowdown, len(p.since(from)), p.stderr.String())
		}
	}
}

// response waits for the response to the request with raw id.
func (p *badSDK) response(t *testing.T, rawID string) badFrame {
	t.Helper()
	return p.waitN(t, 0, 1, func(fr badFrame) bool { return fr.Method == "" && string(fr.ID) == rawID })[0]
}

// call sends a request with a fresh id and waits for its response.
func (p *badSDK) call(t *testing.T, method, params string) badFrame {
	t.Helper()
	p.mu.Lock()
	p.seq++
	id := fmt.Sprintf(`"req-%d"`, p.seq)
	p.mu.Unlock()
	m, _ := json.Marshal(method)
	p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":` + string(m) + `,"params":` + params + `}`)
	return p.response(t, id)
}

// probe checks the process still answers.
func (p *badSDK) probe(t *testing.T) {
	t.Helper()
	badWantErr(t, p.call(t, "dsh/probe", `{}`), -32603, "unknown DeepSeek Harness SDK runtime method: dsh/probe")
}

// silent sends lines the protocol ignores: nothing answers them (the
// original's transport drops unusable lines), and the process serves on.
func (p *badSDK) silent(t *testing.T, lines ...string) {
	t.Helper()
	from := p.mark()
	p.send(lines...)
	p.probe(t)
	time.Sleep(20 * time.Millisecond)
	for _, fr := range p.since(from) {
		if fr.Method == "" && !strings.Contains(fr.raw, "dsh/probe") {
			t.Fatalf("an ignored line was answered: %s", fr.raw)
		}
	}
}

// idle waits for session id's session.status idle from index from on.
func (p *badSDK) idle(t *testing.T, from int, id string) {
	t.Helper()
	p.waitN(t, from, 1, func(fr badFrame) bool {
		if fr.Method != "session.status" {
			return false
		}
		var s struct {
			SessionID string `json:"sessionId"`
			Status    string `json:"status"`
		}
		return json.Unmarshal(fr.Params, &s) == nil && s.SessionID == id && s.Status == "idle"
	})
}

// alive reports whether the process still has its stdout open.
func (p *badSDK) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// shutdown asks the process to exit and wants exit code 0.
func (p *badSDK) shutdown(t *testing.T) {
	t.Helper()
	if fr := p.call(t, "shutdown", `{}`); fr.Error != nil {
		t.Fatalf("shutdown: %s", fr.raw)
	}
	if code := p.exit(t); code != 0 {
		t.Fatalf("exit %d after shutdown (stderr %s)", code, p.stderr.String())
	}
}

// exit waits for the process to end and returns its exit code (-1 if
// killed by a signal).
func (p *badSDK) exit(t *testing.T) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
		t.Fatalf("the process did not exit (stderr %s)", p.stderr.String())
		return -1
	}
}

// checkFrames wants every line the process wrote to stdout to be one valid
// UTF-8 JSON object: stdout belongs to the protocol.
func (p *badSDK) checkFrames(t *testing.T) {
	t.Helper()
	for _, fr := range p.since(0) {
		if !fr.valid {
			t.Errorf("stdout line is not one valid JSON-RPC frame: %.200q", fr.raw)
		}
	}
}

// ---- small checks ----------------------------------------------------------

func badJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// badWantErr wants an error response with code and a message containing msg.
func badWantErr(t *testing.T, fr badFrame, code int, msg string) {
	t.Helper()
	if fr.Error == nil || fr.Error.Code != code || !strings.Contains(fr.Error.Message, msg) {
		t.Fatalf("got %.300s\nwant error %d mentioning %q", fr.raw, code, msg)
	}
}

// badIsEvent matches a session.event of session id and type typ.
func badIsEvent(id, typ string) func(badFrame) bool {
	return func(fr badFrame) bool {
		if fr.Method != "session.event" {
			return false
		}
		var p struct {
			SessionID string `json:"sessionId"`
			Event     struct {
				Type string `json:"type"`
			} `json:"event"`
		}
		return json.Unmarshal(fr.Params, &p) == nil && p.SessionID == id && p.Event.Type == typ
	}
}

// badLog replays session id and checks that every line of its log file is
// valid UTF-8 JSON.
func badLog(t *testing.T, f *badFixture, id string) []event.Event {
	t.Helper()
	evs := pxRead(t, f.w, id)
	dir, err := store.New(f.w.Root).Dir(id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if !utf8.Valid(line) || !json.Valid(line) {
			t.Fatalf("session %q: log line %d is not valid UTF-8 JSON: %.200q", id, i+1, line)
		}
	}
	return evs
}

// badTurnsClosed checks that every turn of the log ended, the last one with
// kind last, and that every tool call got exactly one result.
func badTurnsClosed(t *testing.T, evs []event.Event, last string) {
	t.Helper()
	calls := map[string]int{}
	for _, ev := range evs {
		switch ev.Type {
		case event.TypeToolCall:
			d, _ := event.Decode[event.ToolCall](ev)
			calls[d.CallID] += 0
		case event.TypeToolResult:
			d, _ := event.Decode[event.ToolResult](ev)
			calls[d.Result().ToolCallID]++
		}
	}
	for id, n := range calls {
		if n != 1 {
			t.Fatalf("call %s has %d results", id, n)
		}
	}
	ends := pxTurnEnds(t, evs)
	starts := 0
	for _, ev := range evs {
		if ev.Type == event.TypeTurnStart {
			starts++
		}
	}
	if len(ends) != starts || len(ends) == 0 || ends[len(ends)-1] != last {
		t.Fatalf("%d turns started, ends %v; want the last to end %q", starts, ends, last)
	}
}

// badWaitChild waits until the bash child of the slow turn runs.
func badWaitChild(t *testing.T, marker string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if len(badPgrep(marker)) > 0 {
			return
		}
	}
	t.Fatalf("no process with %s in its command line", marker)
}

// badNoChild wants the slow turn's bash child gone (the whole process group
// is killed when a turn is cancelled).
func badNoChild(t *testing.T, marker string) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if len(badPgrep(marker)) == 0 {
			return
		}
	}
	t.Fatalf("processes outlived the turn: %v", badPgrep(marker))
}

// badPgrep returns the pids whose command line contains marker.
func badPgrep(marker string) []string {
	entries, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// badHWM is the peak RSS of pid in MiB (0 where /proc is missing).
func badHWM(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			var kb float64
			fmt.Sscan(f[1], &kb)
			return kb / 1024
		}
	}
	return 0
}

// badValidLines wants every stdout line to be one valid UTF-8 JSON object.
func badValidLines(t *testing.T, stdout string) {
	t.Helper()
	for _, l := range pxLines(stdout) {
		var m map[string]any
		if !utf8.ValidString(l) || json.Unmarshal([]byte(l), &m) != nil || m["type"] == nil {
			t.Fatalf("stdout line is not a run event: %.200q", l)
		}
	}
	if stdout != "" && !strings.HasSuffix(stdout, "\n") {
		t.Fatalf("stdout ends mid-line: %.200q", stdout)
	}
}

// badOneError wants --json output to be exactly one error event, with
// nothing but a type and a message, whose message contains msg.
func badOneError(t *testing.T, r result, msg string) {
	t.Helper()
	lines := pxLines(r.Stdout)
	var m map[string]any
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &m) != nil || len(m) != 2 || m["type"] != "error" {
		t.Fatalf("stdout %q; want one error event", r.Stdout)
	}
	if s, _ := m["message"].(string); !strings.Contains(s, msg) {
		t.Fatalf("error message %q does not mention %q", s, msg)
	}
}

// badSessionOf returns the session id of a --json run's session line.
func badSessionOf(t *testing.T, stdout string) string {
	t.Helper()
	var s struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
	}
	first, _, _ := strings.Cut(stdout, "\n")
	if json.Unmarshal([]byte(first), &s) != nil || s.Type != "session" || s.SessionID == "" {
		t.Fatalf("no session line: %.200q", stdout)
	}
	return s.SessionID
}
