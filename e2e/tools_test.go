package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-dev/dsh/core/model/modeltest"
)

// TestACPBackgroundJobAcrossTurns: through dsh acp, a background job
// started in one turn keeps running after it, its new output is read in
// the next turn (and shown as that call's update), and it dies with dsh.
func TestACPBackgroundJobAcrossTurns(t *testing.T) {
	needPgrep(t)
	srv, w := newACPWorld(t)
	fifo := filepath.Join(w.Cwd, "go-on")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sleep, marker := sleepMarker()
	// The job prints a banner, then waits on the FIFO the test writes to
	// between the turns, prints again and stays up.
	job := fmt.Sprintf("echo serving; read line < %s; echo second-part-$line; exec %s", fifo, sleep)
	srv.Enqueue(
		modeltest.ToolCallsReply("start it", modeltest.Call{ID: "call_bg", Name: "bash", Args: mustJSON(t, map[string]any{"command": job, "description": "dev server", "run_in_background": true})}),
		modeltest.TextReply("started"),
		modeltest.ToolCallsReply("look at it", modeltest.Call{ID: "call_out", Name: "job_output", Args: `{"job_id":"job-1","wait_ms":20000}`}),
		modeltest.TextReply("it printed more"),
	)
	p := startACP(t, w, "--permission-mode", "auto")
	p.initialize()
	sid := p.newSession()
	if stop := p.promptText(sid, "start the server"); stop != "end_turn" {
		t.Fatalf("turn 1 stop %q", stop)
	}
	if txt, ok := toolMessage(srv.Requests()[1], "call_bg"); !ok || !strings.Contains(txt, "Started background job job-1") || !strings.Contains(txt, "serving") || !strings.Contains(txt, "job-1 is running") {
		t.Fatalf("the model was told %q", txt)
	}
	// The job outlived its turn.
	if len(pgrep(fifo)) == 0 {
		t.Fatal("the background job did not outlive its turn")
	}
	if err := os.WriteFile(fifo, []byte("now\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if stop := p.promptText(sid, "what did it print?"); stop != "end_turn" {
		t.Fatalf("turn 2 stop %q", stop)
	}
	txt, ok := toolMessage(srv.Requests()[3], "call_out")
	if !ok || !strings.Contains(txt, "second-part-now") || strings.Contains(txt, "serving") || !strings.Contains(txt, "job-1 is running") {
		t.Fatalf("job_output told the model %q", txt)
	}
	// The output shows on the job_output call and on the bash call that
	// started the job.
	shown := map[string]bool{}
	for _, fr := range p.all() {
		if u := fr.update(); u != nil {
			b, _ := json.Marshal(u["content"])
			if strings.Contains(string(b), "second-part-now") {
				shown[fmt.Sprint(u["toolCallId"])] = true
			}
		}
	}
	if !shown["call_out"] || !shown["call_bg"] {
		t.Errorf("the job's new output was shown on %v, want call_out and call_bg", shown)
	}
	waitPgrep(t, marker, true, acpTimeout)
	// dsh exits when its client goes; the job goes with it.
	if code := p.exit(); code != 0 {
		t.Fatalf("dsh acp exited %d", code)
	}
	if pids := append(pgrep(marker), pgrep(fifo)...); len(pids) != 0 {
		t.Fatalf("background job %v survived dsh's exit", pids)
	}
}

// TestACPImageReadReachesModel: an image read through dsh acp reaches the
// next model request as an image_url part.
func TestACPImageReadReachesModel(t *testing.T) {
	srv, w := newACPWorld(t)
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 8, 6))); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(w.Cwd, "shot.png"), b.String())
	srv.Enqueue(
		modeltest.ToolCallsReply("look", modeltest.Call{ID: "call_img", Name: "read", Args: `{"file_path":"shot.png"}`}),
		modeltest.TextReply("a tiny black picture"),
	)
	p := startACP(t, w, "--permission-mode", "auto")
	p.initialize()
	sid := p.newSession()
	if stop := p.promptText(sid, "what is in shot.png?"); stop != "end_turn" {
		t.Fatalf("stop %q", stop)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	msgs := reqs[1].Body.Messages
	last := msgs[len(msgs)-1]
	if last.Role != "user" || last.Images() != 1 || !strings.Contains(last.Text(), "Attached image(s) from tool result:") {
		t.Fatalf("last message of the request after the read: %s", last.Raw)
	}
	if !strings.Contains(string(last.Raw), `"url":"data:image/png;base64,`) {
		t.Fatalf("the image part is not the PNG: %s", acpShort(string(last.Raw), 300))
	}
	if txt, _ := toolMessage(reqs[1], "call_img"); !strings.Contains(txt, "Image shot.png (image/png, 8x6") {
		t.Fatalf("read told the model %q", txt)
	}
}

// TestACPBackgroundJobDiesWithKilledDsh: a SIGKILL of dsh leaves no
// background job behind.
func TestACPBackgroundJobDiesWithKilledDsh(t *testing.T) {
	needPgrep(t)
	srv, w := newACPWorld(t)
	sleep, marker := sleepMarker()
	srv.Enqueue(
		modeltest.ToolCallsReply("start it", modeltest.Call{ID: "call_bg", Name: "bash", Args: mustJSON(t, map[string]any{"command": "echo up; exec " + sleep, "description": "server", "run_in_background": true})}),
		modeltest.TextReply("started"),
	)
	p := startACP(t, w, "--permission-mode", "auto")
	p.initialize()
	sid := p.newSession()
	if stop := p.promptText(sid, "start"); stop != "end_turn" {
		t.Fatalf("stop %q", stop)
	}
	waitPgrep(t, marker, true, acpTimeout)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	waitPgrep(t, marker, false, 10*time.Second)
}
