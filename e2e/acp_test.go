package e2e

// End-to-end tests of the ACP door, `dsh acp` (issue 7; spec acp.md):
//
//   - TestACPX*: acpx, an ACP client written independently of us (npm,
//     pinned in testdata/acpx), drives the built binary against the fake
//     DeepSeek server. Its --format json output is the raw ACP wire, both
//     ways, which the tests read.
//   - TestACPBadInput* and the other TestACP*: a raw NDJSON client on the
//     binary's stdin/stdout, for the frames no well-behaved client sends.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// acpTimeout bounds every wait on the binary or on acpx.
const acpTimeout = 30 * time.Second

// Messages and codes a client may match on; restated here so the test
// pins them rather than whatever the implementation's constants say.
const (
	acpMsgInFlight = "a prompt is already in flight for this session"
	acpInvalidParm = -32602
)

// acpFrame is one JSON-RPC message of the wire.
type acpFrame struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	Raw string `json:"-"`
}

func (f acpFrame) isResponse() bool { return f.Method == "" && len(f.ID) > 0 }

// update is the params.update of a session/update notification (nil
// otherwise).
func (f acpFrame) update() map[string]any {
	if f.Method != "session/update" {
		return nil
	}
	var p struct {
		Update map[string]any `json:"update"`
	}
	_ = json.Unmarshal(f.Params, &p)
	return p.Update
}

func (f acpFrame) stopReason() string {
	var r struct {
		StopReason string `json:"stopReason"`
	}
	_ = json.Unmarshal(f.Result, &r)
	return r.StopReason
}

func acpShort(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ---------------------------------------------------------------------
// acpx

var (
	acpxOnce sync.Once
	acpxCLI  string
	acpxErr  error
)

// needAcpx returns the path of acpx's CLI script. `go test` installs
// nothing (no network): scripts/test-deps.sh installs the pinned acpx, and
// without it, or with another version installed, the test is skipped with
// a message saying so — except under CI=true (.ci/run), where the script
// has run and a missing acpx is a failure, not a silent skip.
func needAcpx(t *testing.T) string {
	t.Helper()
	acpxOnce.Do(func() {
		dir, err := filepath.Abs(filepath.Join("testdata", "acpx"))
		if err != nil {
			acpxErr = err
			return
		}
		if _, err := exec.LookPath("node"); err != nil {
			acpxErr = fmt.Errorf("the acpx e2e tests need node on PATH (acpx, the independent ACP client, is an npm package): %w", err)
			return
		}
		if got, want := acpxInstalled(dir), acpxPinned(dir); got != want || want == "" {
			acpxErr = fmt.Errorf("acpx %q is not installed in %s (found %q): run ./scripts/test-deps.sh", want, dir, got)
			return
		}
		cli := filepath.Join(dir, "node_modules", "acpx", "dist", "cli.js")
		// acpx declares node >= 22.13; it runs on 20 too. Whether it runs
		// on this node is asked of it, once, rather than failing in a test.
		out, err := exec.Command("node", cli, "--version").CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != acpxPinned(dir) {
			acpxErr = fmt.Errorf("acpx %s does not run on this node (%v: %q): install Node 22.13 or newer", acpxPinned(dir), err, got)
			return
		}
		acpxCLI = cli
	})
	if acpxErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(acpxErr)
		}
		t.Skipf("skipping: %v", acpxErr)
	}
	return acpxCLI
}

// acpxPinned is the acpx version package.json pins; acpxInstalled the one
// in node_modules ("" if none).
func acpxPinned(dir string) string {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "package.json"))
	_ = json.Unmarshal(b, &pkg)
	return pkg.Dependencies["acpx"]
}

func acpxInstalled(dir string) string {
	var pkg struct {
		Version string `json:"version"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", "acpx", "package.json"))
	if err != nil || json.Unmarshal(b, &pkg) != nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "acpx", "dist", "cli.js")); err != nil {
		return ""
	}
	return pkg.Version
}

// needPgrep fails the test unless pgrep, which the tests use to find
// surviving processes, is on PATH.
func needPgrep(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("pgrep"); err != nil {
		t.Fatalf("this test looks for surviving processes with pgrep, which is not on PATH: %v", err)
	}
}

// acpxWorld runs acpx in a world: the agent is the built binary, its
// state lives in its own HOME.
type acpxWorld struct {
	*world
	cli  string
	home string
	// agent is the --agent command line; its --session-root argument (the
	// world's own) marks every dsh this world starts, for pgrep.
	agent string
}

func newAcpxWorld(t *testing.T, modelEnv ...string) *acpxWorld {
	t.Helper()
	cli := needAcpx(t)
	needPgrep(t)
	w := newWorld(t, modelEnv...)
	aw := &acpxWorld{world: w, cli: cli, home: t.TempDir(), agent: dshBin + " acp --session-root " + w.Root}
	t.Cleanup(func() {
		aw.waitNoAgents()
		// acpx puts its queue sockets in /tmp/acpx-<hash of HOME>,
		// whatever TMPDIR says, and leaves the directory behind.
		sum := sha256.Sum256([]byte(aw.home))
		dir := filepath.Join("/tmp", "acpx-"+hex.EncodeToString(sum[:])[:10])
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("removing acpx's socket directory: %v", err)
		}
	})
	return aw
}

// acpxRun is one finished acpx invocation.
type acpxRun struct {
	Stdout, Stderr string
	Code           int
	Frames         []acpFrame // stdout, line by line
}

// run runs acpx with the global flags every test uses, then args.
func (aw *acpxWorld) run(args ...string) acpxRun {
	aw.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*acpTimeout)
	defer cancel()
	all := append([]string{aw.cli, "--agent", aw.agent, "--cwd", aw.Cwd, "--format", "json",
		"--timeout", "60", "--ttl", "1"}, args...)
	cmd := exec.CommandContext(ctx, "node", all...)
	cmd.Dir = aw.Cwd
	cmd.Env = append(slices.DeleteFunc(slices.Clone(aw.Env), func(s string) bool { return strings.HasPrefix(s, "HOME=") }), "HOME="+aw.home)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := acpxRun{Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	case err != nil:
		aw.t.Fatalf("acpx %s: %v", strings.Join(args, " "), err)
	}
	for i, line := range strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n") {
		if line == "" {
			continue
		}
		f := acpFrame{Raw: line}
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			aw.t.Fatalf("acpx %s: stdout line %d is not JSON: %q", strings.Join(args, " "), i+1, acpShort(line, 300))
		}
		r.Frames = append(r.Frames, f)
	}
	if testing.Verbose() {
		aw.t.Logf("acpx %s → exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.Code, acpShort(r.Stdout, 20000), r.Stderr)
	}
	return r
}

func (r acpxRun) dump() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, acpShort(r.Stdout, 12000), acpShort(r.Stderr, 4000))
}

// requests are the frames carrying method (requests and notifications).
func (r acpxRun) requests(method string) []acpFrame {
	var out []acpFrame
	for _, f := range r.Frames {
		if f.Method == method {
			out = append(out, f)
		}
	}
	return out
}

// responseTo finds the response to req: the first later response with its
// id that is an error or whose result has key (the ids of the two
// directions overlap, so the result's shape tells them apart).
func (r acpxRun) responseTo(req acpFrame, key string) (acpFrame, bool) {
	start := slices.IndexFunc(r.Frames, func(f acpFrame) bool { return f.Raw == req.Raw })
	// The frames carry no direction, and each side numbers its own
	// requests: a request of the other side's with the same id (the agent's
	// fs/read_text_file numbered like the client's session/prompt) is
	// answered first, so its answer is not this one's.
	others := 0
	for _, f := range r.Frames[start+1:] {
		if f.Method != "" && string(f.ID) == string(req.ID) {
			others++
			continue
		}
		if !f.isResponse() || string(f.ID) != string(req.ID) {
			continue
		}
		if others > 0 {
			others--
			continue
		}
		if f.Error != nil {
			return f, true
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(f.Result, &m) == nil {
			if _, ok := m[key]; ok {
				return f, true
			}
		}
	}
	return acpFrame{}, false
}

// toolUpdates are the tool_call and tool_call_update updates of one call.
func (r acpxRun) toolUpdates(callID string) []map[string]any {
	var out []map[string]any
	for _, f := range r.Frames {
		u := f.update()
		if u == nil {
			continue
		}
		if k := u["sessionUpdate"]; (k == "tool_call" || k == "tool_call_update") && u["toolCallId"] == callID {
			out = append(out, u)
		}
	}
	return out
}

// promptStop checks the run's one session/prompt and returns its session
// and stop reason.
func (r acpxRun) promptStop(t *testing.T) (sessionID, stop string) {
	t.Helper()
	prompts := r.requests("session/prompt")
	if len(prompts) != 1 {
		t.Fatalf("want one session/prompt on the wire, got %d\n%s", len(prompts), r.dump())
	}
	var p struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(prompts[0].Params, &p)
	resp, ok := r.responseTo(prompts[0], "stopReason")
	if !ok {
		t.Fatalf("no answer to session/prompt on the wire\n%s", r.dump())
	}
	if resp.Error != nil {
		t.Fatalf("session/prompt failed: %s", resp.Raw)
	}
	return p.SessionID, resp.stopReason()
}

// agentPids lists the running processes whose command line carries the
// world's marker (its session root).
func (aw *acpxWorld) agentPids() []string {
	out, err := exec.Command("pgrep", "-f", aw.Root).Output()
	if err != nil {
		return nil // exit 1: none
	}
	return strings.Fields(string(out))
}

// queueOwners lists acpx's background queue owners of this world: the
// lock files under its HOME (each owner removes its own on exit).
func (aw *acpxWorld) queueOwners() []string {
	var out []string
	_ = filepath.WalkDir(filepath.Join(aw.home, ".acpx", "queues"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// waitNoAgents waits until no dsh started for this world runs and acpx's
// queue owner (which keeps the agent for --ttl after a `prompt`) is gone.
func (aw *acpxWorld) waitNoAgents() {
	aw.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		pids, owners := aw.agentPids(), aw.queueOwners()
		if len(pids) == 0 && len(owners) == 0 {
			return
		}
		if time.Now().After(deadline) {
			aw.t.Errorf("after acpx: dsh processes %v and queue owner files %v survive", pids, owners)
			for _, p := range pids {
				var pid int
				if _, err := fmt.Sscan(p, &pid); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// toolMessage is the text of the tool message answering callID in req.
func toolMessage(req *modeltest.Request, callID string) (string, bool) {
	for _, m := range req.Body.Messages {
		if m.Role == "tool" && m.ToolCallID == callID {
			return m.Text(), true
		}
	}
	return "", false
}

// editScript queues the model's side of an edit turn: read a.txt, edit
// it, answer.
func editScript(srv *modeltest.Server) {
	srv.Enqueue(
		modeltest.ToolCallsReply("look first", modeltest.Call{ID: "call_read", Name: "read", Args: `{"file_path":"a.txt"}`}),
		modeltest.ToolCallsReply("now change it", modeltest.Call{ID: "call_edit", Name: "edit", Args: `{"file_path":"a.txt","old_string":"old","new_string":"new"}`, Fragments: 3}),
		modeltest.TextReply("edited"),
	)
}

// checkPermissionRoundTrip finds the one session/request_permission of the
// run, about the edit, and returns the option the client selected.
func checkPermissionRoundTrip(t *testing.T, r acpxRun) string {
	t.Helper()
	asks := r.requests("session/request_permission")
	if len(asks) != 1 {
		t.Fatalf("want one session/request_permission (the edit; reads need none in ask mode), got %d\n%s", len(asks), r.dump())
	}
	var p struct {
		ToolCall struct {
			ToolCallID string `json:"toolCallId"`
			Kind       string `json:"kind"`
		} `json:"toolCall"`
		Options []struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	if err := json.Unmarshal(asks[0].Params, &p); err != nil {
		t.Fatal(err)
	}
	if p.ToolCall.ToolCallID != "call_edit" || p.ToolCall.Kind != "edit" {
		t.Errorf("permission asked about %+v, want the edit call", p.ToolCall)
	}
	var kinds []string
	for _, o := range p.Options {
		kinds = append(kinds, o.Kind)
	}
	if want := []string{"allow_once", "allow_always", "reject_once", "reject_always"}; !slices.Equal(kinds, want) {
		t.Errorf("permission options %v, want %v", kinds, want)
	}
	// The tool_call of the edit reached the client before the question.
	iAsk := slices.IndexFunc(r.Frames, func(f acpFrame) bool { return f.Raw == asks[0].Raw })
	iCall := slices.IndexFunc(r.Frames, func(f acpFrame) bool {
		u := f.update()
		return u != nil && u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "call_edit"
	})
	if iCall < 0 || iCall > iAsk {
		t.Errorf("the edit's tool_call (frame %d) did not precede its permission request (frame %d)", iCall, iAsk)
	}
	resp, ok := r.responseTo(asks[0], "outcome")
	if !ok || resp.Error != nil {
		t.Fatalf("session/request_permission not answered on the wire (%v)\n%s", resp.Raw, r.dump())
	}
	var out struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	_ = json.Unmarshal(resp.Result, &out)
	if out.Outcome.Outcome != "selected" {
		t.Fatalf("permission outcome %s", resp.Raw)
	}
	return out.Outcome.OptionID
}

// TestACPXEditApproved: acpx advertises fs/*, so the read and the edit go
// through fs/read_text_file and fs/write_text_file.
func TestACPXEditApproved(t *testing.T) { testACPXEditApproved(t, true) }

// TestACPXEditApprovedLocal: without fs/* and terminal/* (--no-fs
// --no-terminal) dsh reads and writes the file itself.
func TestACPXEditApprovedLocal(t *testing.T) { testACPXEditApproved(t, false) }

func testACPXEditApproved(t *testing.T, clientFS bool) {
	t.Parallel()
	srv := modeltest.New(t)
	aw := newAcpxWorld(t, srv.Env()...)
	file := filepath.Join(aw.Cwd, "a.txt")
	writeFile(t, file, "hello old world\n")
	editScript(srv)

	args := []string{"--approve-all", "exec", "please edit a.txt"}
	if !clientFS {
		args = append([]string{"--no-fs", "--no-terminal"}, args...)
	}
	r := aw.run(args...)
	reads, writes := len(r.requests("fs/read_text_file")), len(r.requests("fs/write_text_file"))
	if clientFS && (reads == 0 || writes != 1) {
		t.Errorf("with client fs: %d fs/read_text_file and %d fs/write_text_file, want some and 1", reads, writes)
	}
	if !clientFS && reads+writes != 0 {
		t.Errorf("without client fs: %d fs/read_text_file and %d fs/write_text_file, want none", reads, writes)
	}
	if r.Code != 0 {
		t.Fatalf("acpx exec: want exit 0\n%s", r.dump())
	}
	if _, stop := r.promptStop(t); stop != "end_turn" {
		t.Errorf("stopReason %q, want end_turn", stop)
	}
	if got := checkPermissionRoundTrip(t, r); got != "allow_once" {
		t.Errorf("--approve-all selected %q, want allow_once", got)
	}
	if got := readFile(t, file); got != "hello new world\n" {
		t.Errorf("a.txt = %q after an approved edit", got)
	}
	// The edit's final update carries the diff.
	ups := r.toolUpdates("call_edit")
	if len(ups) == 0 {
		t.Fatalf("no updates for the edit call\n%s", r.dump())
	}
	last := ups[len(ups)-1]
	if last["status"] != "completed" {
		t.Errorf("edit ended %v, want completed: %v", last["status"], last)
	}
	diff, _ := json.Marshal(last["content"])
	if !strings.Contains(string(diff), `"type":"diff"`) || !strings.Contains(string(diff), `"oldText":"hello old world\n"`) ||
		!strings.Contains(string(diff), `"newText":"hello new world\n"`) {
		t.Errorf("edit content %s, want a diff old→new", diff)
	}
	// The model saw the read's content and the edit's success.
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model requests %d, want 3", len(reqs))
	}
	if txt, ok := toolMessage(reqs[1], "call_read"); !ok || !strings.Contains(txt, "hello old world") {
		t.Errorf("read result %q", txt)
	}
	if txt, ok := toolMessage(reqs[2], "call_edit"); !ok || strings.Contains(txt, "denied") || strings.Contains(txt, "refused") {
		t.Errorf("edit result %q (found %v)", txt, ok)
	}
}

func TestACPXEditDenied(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	aw := newAcpxWorld(t, srv.Env()...)
	file := filepath.Join(aw.Cwd, "a.txt")
	writeFile(t, file, "hello old world\n")
	editScript(srv)

	r := aw.run("--deny-all", "exec", "please edit a.txt")
	// acpx exits 5 ("permission denied") when every permission request of
	// the run was denied; the turn itself ends normally.
	if r.Code != 5 {
		t.Fatalf("acpx exec --deny-all: want exit 5 (permission denied)\n%s", r.dump())
	}
	if _, stop := r.promptStop(t); stop != "end_turn" {
		t.Errorf("stopReason %q, want end_turn", stop)
	}
	if got := checkPermissionRoundTrip(t, r); !strings.HasPrefix(got, "reject_") {
		t.Errorf("--deny-all selected %q, want a reject option", got)
	}
	if got := readFile(t, file); got != "hello old world\n" {
		t.Errorf("a.txt = %q after a refused edit", got)
	}
	ups := r.toolUpdates("call_edit")
	if len(ups) == 0 || ups[len(ups)-1]["status"] != "failed" {
		t.Fatalf("the refused edit did not end failed: %v", ups)
	}
	if content, _ := json.Marshal(ups[len(ups)-1]["content"]); !strings.Contains(string(content), "refused") {
		t.Errorf("the refused edit's last update shows %s, want the refusal", content)
	}
	if len(r.requests("fs/write_text_file")) != 0 {
		t.Errorf("fs/write_text_file was called for a refused edit\n%s", r.dump())
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model requests %d, want 3", len(reqs))
	}
	txt, ok := toolMessage(reqs[2], "call_edit")
	if !ok || !strings.Contains(txt, "refused") {
		t.Errorf("the model was told %q (found %v), want a refusal", txt, ok)
	}
}

func TestACPXResumeSession(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	aw := newAcpxWorld(t, srv.Env()...)
	srv.Enqueue(modeltest.ReasoningReply("think", "first answer"), modeltest.TextReply("second answer"))

	// 1. A one-shot turn creates the session.
	first := aw.run("--approve-all", "exec", "remember the word kumquat")
	if first.Code != 0 {
		t.Fatalf("acpx exec: want exit 0\n%s", first.dump())
	}
	news := first.requests("session/new")
	if len(news) != 1 {
		t.Fatalf("want one session/new, got %d\n%s", len(news), first.dump())
	}
	created, ok := first.responseTo(news[0], "sessionId")
	if !ok || created.Error != nil {
		t.Fatalf("session/new not answered\n%s", first.dump())
	}
	var ns struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(created.Result, &ns)
	sid, stop := first.promptStop(t)
	if sid != ns.SessionID || stop != "end_turn" {
		t.Fatalf("first prompt: session %q stop %q, want %q end_turn", sid, stop, ns.SessionID)
	}
	aw.waitNoAgents()

	// 2. acpx binds its cwd session to the existing ACP session...
	bind := aw.run("--approve-all", "sessions", "new", "--resume-session", ns.SessionID)
	if bind.Code != 0 || !strings.Contains(bind.Stdout, ns.SessionID) {
		t.Fatalf("acpx sessions new --resume-session: want exit 0 naming %s\n%s", ns.SessionID, bind.dump())
	}
	aw.waitNoAgents()

	// 3. ...and a new process resumes it for the next prompt.
	second := aw.run("--approve-all", "prompt", "what was the word?")
	if second.Code != 0 {
		t.Fatalf("acpx prompt: want exit 0\n%s", second.dump())
	}
	if n := len(second.requests("session/new")); n != 0 {
		t.Errorf("the resumed run created %d new session(s)\n%s", n, second.dump())
	}
	reconnects := append(second.requests("session/resume"), second.requests("session/load")...)
	if len(reconnects) != 1 {
		t.Fatalf("want one session/resume or session/load, got %d\n%s", len(reconnects), second.dump())
	}
	var rp struct {
		SessionID string `json:"sessionId"`
		Cwd       string `json:"cwd"`
	}
	_ = json.Unmarshal(reconnects[0].Params, &rp)
	if rp.SessionID != ns.SessionID || rp.Cwd != aw.Cwd {
		t.Errorf("%s of %+v, want session %s in %s", reconnects[0].Method, rp, ns.SessionID, aw.Cwd)
	}
	if resp, ok := second.responseTo(reconnects[0], "configOptions"); !ok || resp.Error != nil {
		t.Errorf("%s not answered with the session's options: %s", reconnects[0].Method, resp.Raw)
	}
	sid, stop = second.promptStop(t)
	if sid != ns.SessionID || stop != "end_turn" {
		t.Errorf("second prompt: session %q stop %q, want %q end_turn", sid, stop, ns.SessionID)
	}
	aw.waitNoAgents()

	// The model saw the first turn as the prefix of the second (the
	// server's prefix check would have reported otherwise).
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model requests %d, want 2", len(reqs))
	}
	var roles, texts []string
	for _, m := range reqs[1].Body.Messages {
		if strings.HasPrefix(m.Text(), modeltest.ContextTag) {
			continue // dsh's context message, before the first prompt
		}
		roles = append(roles, m.Role)
		texts = append(texts, m.Text())
	}
	if !slices.Equal(roles, []string{"system", "user", "assistant", "user"}) {
		t.Fatalf("second request roles %v", roles)
	}
	if !strings.Contains(texts[1], "kumquat") || texts[2] != "first answer" || !strings.Contains(texts[3], "what was the word?") {
		t.Errorf("second request history %q", texts)
	}
	if v := srv.Violations(); len(v) != 0 {
		t.Errorf("model-side invariant violations: %v", v)
	}
}

// TestACPXSessionsList lists the agent's sessions through acpx
// (session/list): a session made by `dsh run` in the same cwd is there.
func TestACPXSessionsList(t *testing.T) {
	t.Parallel()
	srv := modeltest.New(t)
	aw := newAcpxWorld(t, srv.Env()...)
	srv.Enqueue(modeltest.TextReply("from run"))
	res := aw.world.run(nil, "run", "--json", "a headless task")
	if res.Code != 0 {
		t.Fatalf("dsh run: exit %d\n%s", res.Code, res.Stderr)
	}
	var first struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(res.Stdout, "\n", 2)[0]), &first); err != nil || first.SessionID == "" {
		t.Fatalf("dsh run --json: no session line: %q", acpShort(res.Stdout, 300))
	}
	r := aw.run("sessions", "list")
	if r.Code != 0 || len(r.Frames) != 1 {
		t.Fatalf("acpx sessions list: want exit 0 and one JSON line\n%s", r.dump())
	}
	var list struct {
		Source   string `json:"source"`
		Sessions []struct {
			SessionID string `json:"sessionId"`
			Cwd       string `json:"cwd"`
			Title     string `json:"title"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(r.Frames[0].Raw), &list); err != nil {
		t.Fatal(err)
	}
	if list.Source != "agent" || len(list.Sessions) != 1 || list.Sessions[0].SessionID != first.SessionID ||
		list.Sessions[0].Cwd != aw.Cwd || list.Sessions[0].Title != "a headless task" {
		t.Errorf("acpx sessions list = %+v, want the dsh run session %s titled %q in %s", list, first.SessionID, "a headless task", aw.Cwd)
	}
}

// ---------------------------------------------------------------------
// raw NDJSON client

// acpPipe is a raw client of `dsh acp`: it writes lines and records every
// line the binary writes.
type acpPipe struct {
	t      *testing.T
	w      *world
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *syncBuffer
	nextID int

	mu      sync.Mutex
	frames  []acpFrame
	bad     []string // stdout lines that are not JSON
	changed chan struct{}
	eof     bool
	done    chan struct{} // the reader ended and the process was reaped
	code    int
}

func startACP(t *testing.T, w *world, args ...string) *acpPipe {
	t.Helper()
	cmd, stdin, stdout, stderr := w.start(append([]string{"acp"}, args...)...)
	p := &acpPipe{t: t, w: w, cmd: cmd, stdin: stdin, stderr: stderr, nextID: 1000,
		changed: make(chan struct{}), done: make(chan struct{})}
	go p.read(stdout)
	t.Cleanup(func() {
		_ = p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(acpTimeout):
			_ = cmd.Process.Kill()
			<-p.done
			t.Errorf("dsh acp did not exit after its stdin closed\nstderr:\n%s", acpShort(p.stderr.String(), 4000))
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, l := range p.bad {
			t.Errorf("dsh acp wrote a non-JSON line to stdout: %q", acpShort(l, 300))
		}
	})
	return p
}

func (p *acpPipe) read(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 1<<20)
	for {
		line, err := br.ReadString('\n')
		if line = strings.TrimRight(line, "\n"); line != "" {
			f := acpFrame{Raw: line}
			var batch []acpFrame
			p.mu.Lock()
			switch {
			case strings.HasPrefix(line, "[") && json.Unmarshal([]byte(line), &batch) == nil:
				// The answer to a batch: one array of responses.
				for _, b := range batch {
					b.Raw = line
					p.frames = append(p.frames, b)
				}
			case json.Unmarshal([]byte(line), &f) != nil:
				p.bad = append(p.bad, line)
			default:
				p.frames = append(p.frames, f)
			}
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
		}
		if err != nil {
			break
		}
	}
	// Wait only once stdout is drained (exec closes the pipe on exit).
	err := p.cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	p.mu.Lock()
	p.eof, p.code = true, code
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	close(p.done)
}

// send writes raw lines.
func (p *acpPipe) send(lines ...string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, strings.Join(lines, "\n")+"\n"); err != nil {
		p.t.Fatalf("writing to dsh acp: %v\nstderr:\n%s", err, p.stderr)
	}
}

// request sends a request and returns its id (JSON text).
func (p *acpPipe) request(method string, params any) string {
	p.t.Helper()
	p.nextID++
	id := fmt.Sprint(p.nextID)
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.nextID, "method": method, "params": params})
	if err != nil {
		p.t.Fatal(err)
	}
	p.send(string(b))
	return id
}

// notify sends a notification.
func (p *acpPipe) notify(method string, params any) {
	p.t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err != nil {
		p.t.Fatal(err)
	}
	p.send(string(b))
}

// waitFor returns the first frame (from the start) matching match.
func (p *acpPipe) waitFor(what string, match func(acpFrame) bool) acpFrame {
	p.t.Helper()
	timeout := time.NewTimer(acpTimeout)
	defer timeout.Stop()
	for {
		p.mu.Lock()
		for _, f := range p.frames {
			if match(f) {
				p.mu.Unlock()
				return f
			}
		}
		ch, eof := p.changed, p.eof
		p.mu.Unlock()
		if eof {
			p.t.Fatalf("dsh acp exited waiting for %s\nstderr:\n%s", what, acpShort(p.stderr.String(), 4000))
		}
		select {
		case <-ch:
		case <-timeout.C:
			p.t.Fatalf("timed out waiting for %s\nstderr:\n%s", what, acpShort(p.stderr.String(), 4000))
		}
	}
}

// response waits for the response to id.
func (p *acpPipe) response(id string) acpFrame {
	p.t.Helper()
	return p.waitFor("the response to "+id, func(f acpFrame) bool { return f.isResponse() && string(f.ID) == id })
}

// call sends a request and waits for its response.
func (p *acpPipe) call(method string, params any) acpFrame {
	p.t.Helper()
	return p.response(p.request(method, params))
}

// wantError checks f is an error with code whose message (or data, where
// the SDK puts the details of its own validation) contains msg.
func (p *acpPipe) wantError(f acpFrame, code int, msg string) {
	p.t.Helper()
	if f.Error == nil {
		p.t.Errorf("want error %d %q, got %s", code, msg, f.Raw)
		return
	}
	if f.Error.Code != code || !(strings.Contains(f.Error.Message, msg) || strings.Contains(string(f.Error.Data), msg)) {
		p.t.Errorf("error %s, want %d containing %q", f.Raw, code, msg)
	}
}

func (p *acpPipe) wantResult(f acpFrame) {
	p.t.Helper()
	if f.Error != nil || f.Result == nil {
		p.t.Fatalf("want a result, got %s\nstderr:\n%s", f.Raw, acpShort(p.stderr.String(), 4000))
	}
}

func (p *acpPipe) initialize() {
	p.t.Helper()
	f := p.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	p.wantResult(f)
	var r struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	_ = json.Unmarshal(f.Result, &r)
	if r.ProtocolVersion != 1 {
		p.t.Errorf("initialize answered %s", f.Raw)
	}
}

func (p *acpPipe) newSession() string {
	p.t.Helper()
	f := p.call("session/new", map[string]any{"cwd": p.w.Cwd, "mcpServers": []any{}})
	p.wantResult(f)
	var r struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(f.Result, &r)
	if r.SessionID == "" {
		p.t.Fatalf("session/new answered %s", f.Raw)
	}
	return r.SessionID
}

func textPrompt(sid, text string) map[string]any {
	return map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}
}

// promptText runs one text prompt and returns its stop reason.
func (p *acpPipe) promptText(sid, text string) string {
	p.t.Helper()
	f := p.call("session/prompt", textPrompt(sid, text))
	p.wantResult(f)
	return f.stopReason()
}

// exit closes stdin and waits for the process; it returns the exit code.
func (p *acpPipe) exit() int {
	p.t.Helper()
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(acpTimeout):
		p.t.Fatalf("dsh acp did not exit after its stdin closed\nstderr:\n%s", acpShort(p.stderr.String(), 4000))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.code
}

func newACPWorld(t *testing.T) (*modeltest.Server, *world) {
	t.Helper()
	srv := modeltest.New(t)
	return srv, newWorld(t, srv.Env()...)
}

func TestACPBadInputUnknownSession(t *testing.T) {
	srv, w := newACPWorld(t)
	p := startACP(t, w)
	p.initialize()
	const ghost = "session-00000000000000000000000000000000"
	p.wantError(p.call("session/prompt", textPrompt(ghost, "hi")), acpInvalidParm, "unknown session")
	p.wantError(p.call("session/load", map[string]any{"sessionId": ghost, "cwd": w.Cwd, "mcpServers": []any{}}), acpInvalidParm, "unknown session")
	p.wantError(p.call("session/resume", map[string]any{"sessionId": ghost, "cwd": w.Cwd}), acpInvalidParm, "unknown session")
	p.wantError(p.call("session/set_mode", map[string]any{"sessionId": ghost, "modeId": "full"}), acpInvalidParm, "unknown session")
	p.wantError(p.call("session/set_config_option", map[string]any{"sessionId": ghost, "configId": "mode", "value": "full"}), acpInvalidParm, "unknown session")
	p.wantError(p.call("session/close", map[string]any{"sessionId": ghost}), acpInvalidParm, "unknown session")
	// A cancel of an unknown session is a notification: nothing answers
	// and nothing breaks.
	p.notify("session/cancel", map[string]any{"sessionId": ghost})
	srv.Enqueue(modeltest.TextReply("still here"))
	if stop := p.promptText(p.newSession(), "hi"); stop != "end_turn" {
		t.Errorf("stopReason %q", stop)
	}
}

func TestACPBadInputCwd(t *testing.T) {
	_, w := newACPWorld(t)
	p := startACP(t, w)
	p.initialize()
	file := filepath.Join(w.Cwd, "f.txt")
	writeFile(t, file, "x")
	for _, tc := range []struct {
		cwd  any
		want string
	}{
		{"ws", "absolute"},
		{"./ws", "absolute"},
		{"", "cwd is required"},
		{filepath.Join(w.Cwd, "missing"), "missing"},
		{file, "not a directory"},
	} {
		p.wantError(p.call("session/new", map[string]any{"cwd": tc.cwd, "mcpServers": []any{}}), acpInvalidParm, tc.want)
	}
	// A cwd that is not a string is malformed params.
	p.wantError(p.call("session/new", map[string]any{"cwd": 42, "mcpServers": []any{}}), acpInvalidParm, "cannot unmarshal number")
	// A session belongs to its cwd.
	sid := p.newSession()
	other := t.TempDir()
	p.wantError(p.call("session/load", map[string]any{"sessionId": sid, "cwd": other, "mcpServers": []any{}}), acpInvalidParm, "belongs to")
	p.wantError(p.call("session/load", map[string]any{"sessionId": sid, "cwd": "ws", "mcpServers": []any{}}), acpInvalidParm, "absolute")
	p.wantError(p.call("session/list", map[string]any{"cwd": "ws"}), acpInvalidParm, "absolute")
}

func TestACPBadInputPromptInFlight(t *testing.T) {
	srv, w := newACPWorld(t)
	gate := make(chan struct{})
	srv.Enqueue(
		modeltest.NewStream().Role().Gate(gate).Text("first done").Finish("stop").Usage(modeltest.DefaultUsage).Done().Reply(),
		modeltest.TextReply("third done"),
	)
	p := startACP(t, w)
	p.initialize()
	sid := p.newSession()
	first := p.request("session/prompt", textPrompt(sid, "first"))
	if !srv.WaitCount(1, acpTimeout) {
		t.Fatal("the first prompt never reached the model")
	}
	p.wantError(p.call("session/prompt", textPrompt(sid, "second")), acpInvalidParm, acpMsgInFlight)
	// The same again, with the id a string.
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"again","method":"session/prompt","params":%s}`, mustJSON(t, textPrompt(sid, "second again"))))
	p.wantError(p.response(`"again"`), acpInvalidParm, acpMsgInFlight)
	if f, ok := p.find(func(f acpFrame) bool { return f.isResponse() && string(f.ID) == first }); ok {
		t.Fatalf("the first prompt ended while its model reply was held: %s", f.Raw)
	}
	close(gate)
	f := p.response(first)
	p.wantResult(f)
	if f.stopReason() != "end_turn" {
		t.Errorf("first prompt: %s", f.Raw)
	}
	if stop := p.promptText(sid, "third"); stop != "end_turn" {
		t.Errorf("third prompt: %q", stop)
	}
	for _, r := range srv.Requests() {
		for _, m := range r.Body.Messages {
			if m.Role == "user" && strings.Contains(m.Text(), "second") {
				t.Errorf("a refused prompt reached the model: %q", m.Text())
			}
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestACPBadInputContent(t *testing.T) {
	srv, w := newACPWorld(t)
	p := startACP(t, w)
	p.initialize()
	sid := p.newSession()
	for _, tc := range []struct {
		name  string
		block []any
		want  string
	}{
		{"audio", []any{map[string]any{"type": "text", "text": "listen"}, map[string]any{"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}}, "block 2: audio content is not supported"},
		{"empty", []any{}, "empty prompt"},
		{"blank", []any{map[string]any{"type": "text", "text": "  \n"}}, "empty prompt"},
		{"bad base64", []any{map[string]any{"type": "image", "mimeType": "image/png", "data": "!!not base64!!"}}, "base64"},
		{"image type", []any{map[string]any{"type": "image", "mimeType": "image/tiff", "data": "AAAA"}}, "not supported"},
		{"binary resource", []any{map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///x.bin", "mimeType": "application/octet-stream", "blob": "AAAA"}}}, "not supported"},
	} {
		f := p.call("session/prompt", map[string]any{"sessionId": sid, "prompt": tc.block})
		if f.Error == nil || f.Error.Code != acpInvalidParm || !strings.Contains(f.Error.Message, tc.want) {
			t.Errorf("%s: got %s, want %d containing %q", tc.name, f.Raw, acpInvalidParm, tc.want)
		}
	}
	if n := srv.Count(); n != 0 {
		t.Errorf("refused prompts made %d model requests", n)
	}
	// The session is untouched and works.
	srv.Enqueue(modeltest.TextReply("fine"))
	if stop := p.promptText(sid, "now a good one"); stop != "end_turn" {
		t.Errorf("stopReason %q", stop)
	}
	if got := len(srv.Last().Body.Messages); got != 3 {
		t.Errorf("the good prompt's request has %d messages, want system+context+user", got)
	}
}

func TestACPBadInputMalformedFrame(t *testing.T) {
	_, w := newACPWorld(t)
	p := startACP(t, w)
	p.send(
		"this is not json",
		`{"jsonrpc":"2.0","id":41,"method":"initialize","params":{"protocolVersion":`,
		`{"jsonrpc":"2.0","id":"p42","method":"session/prompt","params":{"sessionId":"x","prompt":[`,
		`[1,2,3]`,
		`42`,
		``,
		`{}`,
	)
	// The connection keeps serving; by the answer to the next request,
	// every bad frame before it has been answered.
	p.initialize()
	p.newSession()
	// JSON-RPC 2.0: a frame that does not parse is answered with id null
	// (its id cannot be known); a value that is not a request is -32600,
	// the elements of a batch each.
	parse, invalid := 0, 0
	p.mu.Lock()
	for _, f := range p.frames {
		switch {
		case !f.isResponse():
		case string(f.ID) == "41" || string(f.ID) == `"p42"`:
			t.Errorf("a frame that does not parse was answered with the id it seemed to have: %s", f.Raw)
		case string(f.ID) == "null" && f.Error != nil && f.Error.Code == -32700:
			parse++
		case string(f.ID) == "null" && f.Error != nil && f.Error.Code == -32600:
			invalid++
		}
	}
	p.mu.Unlock()
	if parse != 3 || invalid != 5 {
		t.Errorf("%d parse errors (want 3) and %d invalid requests (want 5: three batch elements, 42, {})", parse, invalid)
	}
	if code := p.exit(); code != 0 {
		t.Errorf("exit %d after a clean EOF\nstderr:\n%s", code, p.stderr)
	}
}

func TestACPBadInputOversizedFrame(t *testing.T) {
	srv, w := newACPWorld(t)
	p := startACP(t, w)
	p.initialize()
	sid := p.newSession()
	big := strings.Repeat("a", 11<<20) // over the SDK's 10 MiB line cap
	// id first, as clients write it. (Concatenation, not %q: 11 MiB
	// through fmt is slow under -race.)
	frame := `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"` + big + `"}]}}`
	p.send(frame)
	p.wantError(p.response("7"), -32600, fmt.Sprintf("frame of %d bytes exceeds the", len(frame)))
	// id last.
	frame = `{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"` + big + `"}]},"id":"tail-8"}`
	p.send(frame)
	p.wantError(p.response(`"tail-8"`), -32600, "exceeds the")
	// A frame a little under 10 MiB still goes through the SDK (its
	// scanner would drop the connection on a line over its cap).
	pad := strings.Repeat("b", 10<<20-64<<10)
	p.send(`{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"_meta":{"pad":"` + pad + `"}}}`)
	p.wantResult(p.response("9"))
	if n := srv.Count(); n != 0 {
		t.Errorf("an oversized prompt made %d model requests", n)
	}
	// The connection keeps serving: initialize, and a prompt.
	p.initialize()
	srv.Enqueue(modeltest.TextReply("after the big one"))
	if stop := p.promptText(sid, "small"); stop != "end_turn" {
		t.Errorf("stopReason %q", stop)
	}
}

func TestACPBadInputUnknownMethod(t *testing.T) {
	_, w := newACPWorld(t)
	p := startACP(t, w)
	p.initialize()
	sid := p.newSession()
	// Methods of the protocol dsh does not serve, and made-up ones.
	p.wantResult(p.call("session/fork", map[string]any{"sessionId": sid, "cwd": w.Cwd, "mcpServers": []any{}})) // served since v0.13.5
	p.wantError(p.call("providers/list", map[string]any{}), -32601, "providers/list")
	p.wantResult(p.call("logout", map[string]any{})) // nothing to forget, but served
	p.wantError(p.call("no/such/method", nil), -32601, "no/such/method")
	// A prompt sent as a notification has no one to answer; it is dropped
	// and the connection keeps serving.
	p.notify("session/prompt", textPrompt("x", "hi"))
	p.initialize()
}

// TestACPBadInputProtocolVersion: a client asking for a version we do not
// speak gets ours.
func TestACPBadInputProtocolVersion(t *testing.T) {
	_, w := newACPWorld(t)
	p := startACP(t, w)
	f := p.call("initialize", map[string]any{"protocolVersion": 99, "clientCapabilities": map[string]any{}})
	p.wantResult(f)
	if !strings.Contains(f.Raw, `"protocolVersion":1`) {
		t.Errorf("initialize(99) answered %s", f.Raw)
	}
}

// sleepMarker is a bash command that sleeps 30 s with a unique argument
// to find its processes by (GNU sleep sums its arguments).
func sleepMarker() (command, marker string) {
	marker = fmt.Sprintf("0.000%09d", rand.IntN(1e9))
	return "sleep 30 " + marker, marker
}

func pgrep(marker string) []string {
	out, err := exec.Command("pgrep", "-f", marker).Output()
	if err != nil {
		return nil
	}
	return strings.Fields(string(out))
}

// waitPgrep waits until pgrep for marker finds some (want true) or no
// (want false) process.
func waitPgrep(t *testing.T, marker string, want bool, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for (len(pgrep(marker)) > 0) != want {
		if time.Now().After(deadline) {
			t.Fatalf("pgrep -f %s: %v, want running=%v", marker, pgrep(marker), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestACPCancelBash(t *testing.T) {
	needPgrep(t)
	srv, w := newACPWorld(t)
	command, marker := sleepMarker()
	srv.Enqueue(
		modeltest.ToolCallsReply("wait a bit", modeltest.Call{ID: "call_sleep", Name: "bash", Args: mustJSON(t, map[string]any{"command": command, "description": "sleep"})}),
		modeltest.TextReply("after the cancel"),
	)
	p := startACP(t, w, "--permission-mode", "full")
	p.initialize()
	sid := p.newSession()
	id := p.request("session/prompt", textPrompt(sid, "run it"))
	waitPgrep(t, marker, true, acpTimeout)
	p.notify("session/cancel", map[string]any{"sessionId": sid})
	f := p.response(id)
	p.wantResult(f)
	if f.stopReason() != "cancelled" {
		t.Fatalf("prompt answered %s, want stopReason cancelled", f.Raw)
	}
	// The process tree is gone by the time the prompt is answered.
	if pids := pgrep(marker); len(pids) != 0 {
		waitPgrep(t, marker, false, 5*time.Second)
		t.Errorf("processes %v survived the answer to the cancelled prompt (gone later)", pids)
	}
	failed := false
	for _, fr := range p.all() {
		if u := fr.update(); u != nil && u["toolCallId"] == "call_sleep" && u["status"] == "failed" {
			failed = true
		}
	}
	if !failed {
		t.Error("the cancelled bash call was not marked failed")
	}
	// The session is usable right after.
	if stop := p.promptText(sid, "next"); stop != "end_turn" {
		t.Fatalf("prompt after the cancel: %q", stop)
	}
	if txt, ok := toolMessage(srv.Last(), "call_sleep"); !ok {
		t.Errorf("the model was not told what happened to the cancelled call")
	} else {
		t.Logf("the model was told: %q", txt)
	}
}

// TestACPClientGoneMidTurn: the client closes stdin while a bash command
// runs; dsh cancels, reaps the command and exits 0.
func TestACPClientGoneMidTurn(t *testing.T) {
	needPgrep(t)
	srv, w := newACPWorld(t)
	command, marker := sleepMarker()
	srv.Enqueue(modeltest.ToolCallsReply("", modeltest.Call{ID: "call_sleep", Name: "bash", Args: mustJSON(t, map[string]any{"command": command})}))
	p := startACP(t, w, "--permission-mode", "full")
	p.initialize()
	sid := p.newSession()
	p.request("session/prompt", textPrompt(sid, "run it"))
	waitPgrep(t, marker, true, acpTimeout)
	t0 := time.Now()
	if code := p.exit(); code != 0 {
		t.Errorf("exit %d, want 0\nstderr:\n%s", code, p.stderr)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("exit took %v", d)
	}
	if pids := pgrep(marker); len(pids) != 0 {
		t.Errorf("processes %v survived dsh acp", pids)
	}
}

// TestACPLoadReplays: a session made over one connection is loaded over
// another process's: its history comes back as updates before the answer,
// and the next prompt extends the same conversation.
func TestACPLoadReplays(t *testing.T) {
	srv, w := newACPWorld(t)
	srv.Enqueue(modeltest.ReasoningReply("hmm", "first answer"), modeltest.TextReply("second answer"))
	p := startACP(t, w)
	p.initialize()
	sid := p.newSession()
	if stop := p.promptText(sid, "first question"); stop != "end_turn" {
		t.Fatalf("stopReason %q", stop)
	}
	if code := p.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}

	q := startACP(t, w)
	q.initialize()
	id := q.request("session/load", map[string]any{"sessionId": sid, "cwd": w.Cwd, "mcpServers": []any{}})
	resp := q.response(id)
	q.wantResult(resp)
	var kinds []string
	for _, f := range q.all() {
		if f.Raw == resp.Raw {
			break
		}
		if u := f.update(); u != nil {
			kinds = append(kinds, fmt.Sprint(u["sessionUpdate"]))
		}
	}
	for _, want := range []string{"user_message_chunk", "agent_thought_chunk", "agent_message_chunk"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("replay before the load answer %v lacks %s", kinds, want)
		}
	}
	if stop := q.promptText(sid, "second question"); stop != "end_turn" {
		t.Fatalf("stopReason %q", stop)
	}
	if v := srv.Violations(); len(v) != 0 {
		t.Errorf("model-side violations: %v", v)
	}
	if n := len(srv.Last().Body.Messages); n != 5 { // system, context, user, assistant, user
		t.Errorf("the loaded session's request has %d messages, want 5", n)
	}
}

// find returns the first frame matching match without waiting.
func (p *acpPipe) find(match func(acpFrame) bool) (acpFrame, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.frames {
		if match(f) {
			return f, true
		}
	}
	return acpFrame{}, false
}

// all is a snapshot of the frames read so far.
func (p *acpPipe) all() []acpFrame {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.frames)
}
