package headless

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// trackReader records whether the task resolver read stdin at all.
type trackReader struct {
	r    io.Reader
	read bool
}

func (t *trackReader) Read(p []byte) (int, error) {
	t.read = true
	return t.r.Read(p)
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("EIO") }

func TestResolveTask(t *testing.T) {
	bigStdin := strings.Repeat("x", 1<<20) + "\n"
	for _, tc := range []struct {
		name      string
		args      []string
		stdin     string
		tty       bool
		want      string
		usage     string // expected usage error message
		readStdin bool
	}{
		{name: "joined", args: []string{"run", "the", " tests"}, stdin: "ignored", want: "run the  tests"},
		{name: "singleWordKeepsSpaces", args: []string{"  fix it\n"}, want: "  fix it\n"},
		{name: "positionalOverPipe", args: []string{"a"}, stdin: "b", want: "a"},
		{name: "positionalWithTTY", args: []string{"a"}, tty: true, want: "a"},
		{name: "dash", args: []string{"-"}, stdin: "from pipe\n", want: "from pipe\n", readStdin: true},
		{name: "dashFromTTY", args: []string{"-"}, stdin: "typed\n", tty: true, want: "typed\n", readStdin: true},
		{name: "piped", stdin: "line1\nline2\n\n", want: "line1\nline2\n\n", readStdin: true},
		{name: "piped1MB", stdin: bigStdin, want: bigStdin, readStdin: true},
		{name: "pipedLeadingSpaceKept", stdin: "  task  ", want: "  task  ", readStdin: true},
		{name: "blankPositional", args: []string{"  "}, stdin: "pipe", usage: msgTaskRequired},
		{name: "emptyPositional", args: []string{""}, stdin: "pipe", usage: msgTaskRequired},
		{name: "blankPositionals", args: []string{" ", "\t"}, stdin: "pipe", usage: msgTaskRequired},
		{name: "blankAndWord", args: []string{" ", "go"}, want: "  go"},
		{name: "noTaskTTY", tty: true, stdin: "never", usage: msgTaskRequired},
		{name: "dashMixed", args: []string{"fix", "-"}, stdin: "pipe", usage: msgDashAlone},
		{name: "dashFirstMixed", args: []string{"-", "x"}, stdin: "pipe", usage: msgDashAlone},
		{name: "twoDashes", args: []string{"-", "-"}, stdin: "pipe", usage: msgDashAlone},
		{name: "dashInWordIsText", args: []string{"use", "-v", "--x"}, want: "use -v --x"},
		{name: "blankStdin", stdin: " \n\t\n", usage: msgTaskRequired, readStdin: true},
		{name: "emptyStdin", usage: msgTaskRequired, readStdin: true},
		{name: "dashBlankStdin", args: []string{"-"}, stdin: "\n", usage: msgTaskRequired, readStdin: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &trackReader{r: strings.NewReader(tc.stdin)}
			got, err := ResolveTask(tc.args, r, tc.tty)
			if r.read != tc.readStdin {
				t.Errorf("stdin read = %v, want %v", r.read, tc.readStdin)
			}
			if tc.usage != "" {
				var ue *UsageError
				if !errors.As(err, &ue) || ue.Error() != tc.usage {
					t.Fatalf("got %q, %v; want usage error %q", got, err, tc.usage)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %.80q, %v; want %.80q", got, err, tc.want)
			}
		})
	}
}

func TestResolveTaskStdinFailure(t *testing.T) {
	_, err := ResolveTask(nil, errReader{}, false)
	var ue *UsageError
	if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), "read task from stdin: EIO") {
		t.Fatalf("got %v", err)
	}
	if _, err := ResolveTask(nil, nil, false); !errors.As(err, &ue) {
		t.Fatalf("nil stdin: %v", err)
	}
}

func TestUsageMessageExample(t *testing.T) {
	if msgTaskRequired != `a task is required, for example: dsh run "run the tests"` {
		t.Error(msgTaskRequired)
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "task"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) || isCharDevice(f) {
		t.Error("a regular file is not a terminal")
	}
	if IsTerminal(nil) {
		t.Error("nil is not a terminal")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	if IsTerminal(pr) {
		t.Error("a pipe is not a terminal")
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if !isCharDevice(null) {
		t.Error("/dev/null is a character device")
	}
	closed, _ := os.Open(os.DevNull)
	closed.Close()
	if IsTerminal(closed) || isCharDevice(closed) {
		t.Error("a closed file is not a terminal")
	}
}

// TestWithPipedContext: empty input leaves the task alone; text follows it
// in a block whose delimiter the text does not contain; binary input is a
// usage error.
func TestWithPipedContext(t *testing.T) {
	var errb strings.Builder
	if got, err := WithPipedContext("task", strings.NewReader(" \n"), &errb); err != nil || got != "task" {
		t.Errorf("blank stdin: %q, %v", got, err)
	}
	got, err := WithPipedContext("task", strings.NewReader("a </stdin> b"), &errb)
	want := "task\n\nThe input piped to this run (stdin, 12 bytes):\n<stdin-2>\na </stdin> b\n</stdin-2>"
	if err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	_, err = WithPipedContext("task", strings.NewReader("PNG\x00\x01"), &errb)
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "binary") {
		t.Errorf("binary stdin: %v", err)
	}
	if errb.Len() != 0 {
		t.Errorf("stderr: %q", errb.String())
	}
}
