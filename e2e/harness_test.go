// Package e2e holds black-box tests of the built dsh binary: each test runs
// the binary as its users do (a supervisor running dsh run, an SDK host, an
// ACP client) against a fake DeepSeek server on 127.0.0.1 that speaks the
// real SSE wire. Nothing here touches the network or the real home
// directory.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// dshBin is the binary under test, built once by TestMain.
var dshBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dsh-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dshBin = filepath.Join(dir, "dsh")
	args := []string{"build", "-o", dshBin}
	if raceBuild {
		args = append(args, "-race")
		// Every dsh the tests start writes its race reports under dir (not
		// to a stderr a test may not show) and stops at the first one;
		// no 1 s sleep at exit.
		raceReports = filepath.Join(dir, "race-report")
		raceEnv = "GORACE=halt_on_error=1 atexit_sleep_ms=0 log_path=" + raceReports
	}
	build := exec.Command("go", append(args, "../cmd/dsh")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building dsh:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: goroutine leak:", err)
			code = 1
		}
	}
	if raceReports != "" {
		reports, _ := filepath.Glob(raceReports + ".*")
		for _, r := range reports {
			b, _ := os.ReadFile(r)
			fmt.Fprintf(os.Stderr, "e2e: the dsh binary reported a data race (%s):\n%s\n", filepath.Base(r), b)
			code = 1
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// raceReports is the GORACE log_path prefix of a -race binary ("" when
// the binary is built without -race); raceEnv the GORACE setting a world
// gives it.
var raceReports, raceEnv string

// world is one isolated environment: a workspace, a session root, a home
// and the environment the binary runs with.
type world struct {
	t    *testing.T
	Cwd  string
	Root string
	Home string
	Env  []string
	// As, when set, runs the binary as that user.
	As *syscall.Credential
}

// newWorld makes a world whose binary talks to modelEnv (for example a
// modeltest server's Env(), or the scripted provider's settings).
func newWorld(t *testing.T, modelEnv ...string) *world {
	t.Helper()
	base := t.TempDir()
	w := &world{t: t, Cwd: filepath.Join(base, "ws"), Root: filepath.Join(base, "sessions"), Home: filepath.Join(base, "home")}
	for _, d := range []string{w.Cwd, w.Home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Resolve symlinks (macOS /var → /private/var) so cwds compare equal.
	if r, err := filepath.EvalSymlinks(w.Cwd); err == nil {
		w.Cwd = r
	}
	w.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + w.Home,
		"XDG_CONFIG_HOME=" + filepath.Join(w.Home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(w.Home, ".state"),
		"DSH_SESSION_ROOT=" + w.Root,
		"TMPDIR=" + os.TempDir(),
	}
	if raceEnv != "" {
		w.Env = append(w.Env, raceEnv)
	}
	w.Env = append(w.Env, modelEnv...)
	return w
}

// scriptEnv writes a scripted-provider script and returns the settings
// that select it.
func (w *world) scriptEnv(script string) []string {
	w.t.Helper()
	path := filepath.Join(filepath.Dir(w.Root), fmt.Sprintf("script-%d.json", time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		w.t.Fatal(err)
	}
	return []string{"DSH_PROVIDER=scripted", "DSH_SCRIPT=" + path}
}

// result is a finished run of the binary.
type result struct {
	Stdout, Stderr string
	Code           int
}

// run runs dsh with args in the world, feeding stdin (nil: /dev/null).
func (w *world) run(stdin io.Reader, args ...string) result {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, dshBin, args...)
	cmd.Dir = w.Cwd
	cmd.Env = w.Env
	cmd.Stdin = stdin
	if w.As != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: w.As}
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			w.t.Fatalf("dsh %s: %v", strings.Join(args, " "), err)
		}
		code = ee.ExitCode()
	}
	return result{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

// start starts dsh with pipes for a door test; the process is killed and
// reaped at cleanup if still running.
func (w *world) start(args ...string) (*exec.Cmd, io.WriteCloser, io.ReadCloser, *syncBuffer) {
	w.t.Helper()
	cmd := exec.Command(dshBin, args...)
	cmd.Dir = w.Cwd
	cmd.Env = w.Env
	if w.As != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: w.As}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	errb := &syncBuffer{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, stdin, stdout, errb
}
