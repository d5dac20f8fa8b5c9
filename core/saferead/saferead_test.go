package saferead

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// home makes a fake home with a private key, and a workspace in it.
func home(t *testing.T) (homeDir, ws, key string) {
	t.Helper()
	homeDir = t.TempDir()
	ws = filepath.Join(homeDir, "project")
	key = filepath.Join(homeDir, ".ssh", "id_ed25519")
	for _, d := range []string{ws, filepath.Dir(key)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(key, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return homeDir, ws, key
}

func policy(homeDir, ws string) Policy {
	return Policy{Roots: []string{ws}, Secret: []string{filepath.Join(homeDir, ".ssh")}}
}

func TestLinkToSecretRefused(t *testing.T) {
	homeDir, ws, key := home(t)
	link := filepath.Join(ws, "AGENTS.md")
	if err := os.Symlink(key, link); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]Policy{"workspace": policy(homeDir, ws), "anywhere": {Roots: []string{"/"}, Secret: []string{filepath.Join(homeDir, ".ssh")}}} {
		f, err := p.Read(link)
		if !errors.Is(err, ErrSecret) || strings.Contains(string(f.Data), "PRIVATE") {
			t.Fatalf("%s: read of a link to the key: %q, %v", name, f.Data, err)
		}
	}
}

func TestLinkThroughSecretRefused(t *testing.T) {
	homeDir, ws, _ := home(t)
	// A link inside the secret place that points back to the workspace:
	// the path passes through it.
	good := filepath.Join(ws, "real.md")
	writeFile(t, good, "fine")
	back := filepath.Join(homeDir, ".ssh", "back")
	if err := os.Symlink(good, back); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(ws, "AGENTS.md")
	if err := os.Symlink(back, link); err != nil {
		t.Fatal(err)
	}
	if _, err := policy(homeDir, ws).Read(link); !errors.Is(err, ErrSecret) {
		t.Fatalf("got %v", err)
	}
}

func TestLinkOutsideRefused(t *testing.T) {
	homeDir, ws, _ := home(t)
	outside := filepath.Join(t.TempDir(), "notes.md")
	writeFile(t, outside, "outside")
	link := filepath.Join(ws, "AGENTS.md")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if _, err := policy(homeDir, ws).Read(link); !errors.Is(err, ErrOutside) {
		t.Fatalf("got %v", err)
	}
	// A relative link that stays inside is fine.
	writeFile(t, filepath.Join(ws, "docs", "rules.md"), "rules")
	inside := filepath.Join(ws, "CLAUDE.md")
	if err := os.Symlink("docs/rules.md", inside); err != nil {
		t.Fatal(err)
	}
	f, err := policy(homeDir, ws).Read(inside)
	if err != nil || string(f.Data) != "rules" || f.Real != filepath.Join(ws, "docs", "rules.md") {
		t.Fatalf("inside link: %+v, %v", f, err)
	}
}

func TestNotRegularRefusedWithoutBlocking(t *testing.T) {
	homeDir, ws, _ := home(t)
	fifo := filepath.Join(ws, "AGENTS.md")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	if _, err := policy(homeDir, ws).Read(fifo); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("FIFO: %v", err)
	}
	if _, err := (Policy{Roots: []string{"/"}}).Read("/dev/zero"); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("/dev/zero: %v", err)
	}
	if _, err := policy(homeDir, ws).Read(ws); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("directory: %v", err)
	}
}

func TestBounded(t *testing.T) {
	homeDir, ws, _ := home(t)
	p := filepath.Join(ws, "big.md")
	writeFile(t, p, strings.Repeat("x", 1000))
	pol := policy(homeDir, ws)
	pol.Max = 10
	f, err := pol.Read(p)
	if err != nil || len(f.Data) != 10 || f.Size != 1000 || !f.Cut() {
		t.Fatalf("%d bytes of %d, cut %v, %v", len(f.Data), f.Size, f.Cut(), err)
	}
}

func TestLinkLoop(t *testing.T) {
	homeDir, ws, _ := home(t)
	a, b := filepath.Join(ws, "a"), filepath.Join(ws, "b")
	_ = os.Symlink(b, a)
	_ = os.Symlink(a, b)
	if _, err := policy(homeDir, ws).Read(a); !errors.Is(err, ErrLinkLoop) {
		t.Fatalf("got %v", err)
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadWhole(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	if _, err := ReadWhole(fifo, 1<<20, time.Second); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("FIFO: %v", err)
	}
	if _, err := ReadWhole("/dev/zero", 1<<20, time.Second); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("/dev/zero: %v", err)
	}
	big := filepath.Join(dir, "big.json")
	writeFile(t, big, strings.Repeat(" ", 2000))
	if _, err := ReadWhole(big, 1000, time.Second); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("big: %v", err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(big, link); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadWhole(link, 4000, time.Second); err != nil || len(data) != 2000 {
		t.Fatalf("link: %d bytes, %v", len(data), err)
	}
}

// TestWalkSteps: Walk shows each place before it looks at it (a link's
// target included), climbs ".." from where a link led, and hands a missing
// component with what follows it to lost.
func TestWalkSteps(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	writeFile(t, filepath.Join(dir, "real", "f"), "x")
	if err := os.Mkdir(filepath.Join(dir, "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../real", filepath.Join(dir, "deep", "link")); err != nil {
		t.Fatal(err)
	}
	var steps []string
	// Not cleaned first: the ".." climbs from where the link led.
	got, err := Walk(dir+"/deep/link/../real/f", func(next string) error {
		steps = append(steps, next)
		return nil
	}, nil)
	if err != nil || got != filepath.Join(dir, "real", "f") {
		t.Fatalf("got %q, %v", got, err)
	}
	if !slices.Contains(steps, filepath.Join(dir, "deep", "link")) || !slices.Contains(steps, filepath.Join(dir, "real")) {
		t.Fatalf("steps %v", steps)
	}
	stop := errors.New("refused")
	if _, err := Walk(filepath.Join(dir, "deep", "link", "f"), func(next string) error {
		if next == filepath.Join(dir, "real") {
			return stop
		}
		return nil
	}, nil); !errors.Is(err, stop) {
		t.Fatalf("a refused step: %v", err)
	}
	var lostAt string
	var lostRest []string
	if _, err := Walk(filepath.Join(dir, "gone", "a", "b"), nil, func(next string, rest []string, err error) (string, error) {
		lostAt, lostRest = next, rest
		return "", err
	}); !errors.Is(err, fs.ErrNotExist) || lostAt != filepath.Join(dir, "gone") || !slices.Equal(lostRest, []string{"a", "b"}) {
		t.Fatalf("lost: %v at %q rest %v", err, lostAt, lostRest)
	}
}
