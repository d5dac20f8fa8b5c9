package core

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/model"
)

func TestFindMentions(t *testing.T) {
	got := findMentions("see @a.go, and @\"dir/a b.txt\" (@b/) mail me@x.org @a.go again @\"open")
	want := []mention{{"a.go,"}, {"dir/a b.txt"}, {"b/)"}, {"a.go"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("mentions %q, want %q", got, want)
	}
}

// userMessage is the last committed user/message of s.
func userMessage(t *testing.T, s *Session) event.Message {
	t.Helper()
	_, evs, err := s.rt.Store().Read(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == event.TypeUserMessage {
			m, err := event.Decode[event.Message](evs[i])
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatal("no user message")
	return event.Message{}
}

func TestPromptInlinesMentionedFiles(t *testing.T) {
	h := newHarness(t, text("ok"), text("ok again"))
	write := func(rel, s string) {
		p := filepath.Join(h.cwd, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("src/main.go", "package main\n")
	write("notes/a b.txt", "spaced\n")
	write("bin.dat", "\x00\x01\x02")
	write("big.txt", strings.Repeat("é", mentionFileBytes)) // 2 bytes a rune: cut, never mid-rune
	outside := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(outside, []byte("not yours"), 0o644)
	os.Symlink(outside, filepath.Join(h.cwd, "link.txt"))

	s := h.session()
	prompt := "explain @src/main.go, read @\"notes/a b.txt\" and list @src/ ; skip @bin.dat @big.txt @link.txt " +
		outside + " @" + outside + " mail a@b.org, @Override @nothing.go"
	if res := run(t, s, prompt); res.Reason.Kind != event.ReasonCompleted {
		t.Fatalf("turn %+v", res.Reason)
	}
	m := userMessage(t, s)
	if m.Content[0].Text != prompt {
		t.Fatalf("the text as typed changed: %q", m.Content[0].Text)
	}
	all := event.JoinText(m.Content)
	for _, w := range []string{
		"[dsh: @src/main.go attached (13 bytes):]\npackage main\n[end of src/main.go]",
		"[dsh: @notes/a b.txt attached (7 bytes):]\nspaced\n[end of notes/a b.txt]",
		"[dsh: @src/ is a folder of 1 entries:]\nmain.go\n[end of src/]",
		"[dsh: @bin.dat not attached: a binary file (3 bytes)]",
		"[cut at 65536 of 131072 bytes; read the file for the rest]",
		"[dsh: @link.txt not attached: outside the workspace]",
		"[dsh: @" + outside + " not attached: outside the workspace]",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("the user message lacks %q:\n%s", w, all)
		}
	}
	if strings.Contains(all, "not yours") || strings.Contains(all, "@Override not") || strings.Contains(all, "nothing.go not") {
		t.Fatalf("attached what it must not:\n%s", all)
	}
	if len(m.Content) != 8 {
		t.Fatalf("%d blocks, want the text and 7 attachments", len(m.Content))
	}

	// The model read the same text, and a resumed session sends it again
	// byte for byte.
	reqs := h.prov.requests()
	var sent string
	for _, msg := range reqs[0].Messages {
		if msg.Role == "user" && !model.IsContext(msg) {
			sent = msg.Content
		}
	}
	if sent != all {
		t.Fatalf("the model read %q", sent)
	}
	s2 := reopen(t, s, h.rt)
	run(t, s2, "thanks")
	reqs = h.prov.requests()
	found := false
	for _, msg := range reqs[1].Messages {
		found = found || msg.Content == all
	}
	if !found {
		t.Fatal("the resumed session does not send the attachments again")
	}
}

func TestMentionOfASecretPlaceIsRefused(t *testing.T) {
	h := newHarness(t, text("ok"))
	secret := filepath.Join(h.cwd, "keys")
	os.MkdirAll(secret, 0o755)
	os.WriteFile(filepath.Join(secret, "id"), []byte("PRIVATE"), 0o600)
	h.rt = h.runtimeWith(func(c *Config) { c.SecretPaths = []string{secret} })
	s := h.session()
	run(t, s, "use @keys/id")
	all := event.JoinText(userMessage(t, s).Content)
	if strings.Contains(all, "PRIVATE") || !strings.Contains(all, "[dsh: @keys/id not attached: a secret place (keys, credentials)]") {
		t.Fatalf("user message:\n%s", all)
	}
}

// TestMentionOfAFolderOutsideIsNotListed: a folder named outside the
// workspace, directly or through a link inside it, is refused, never
// listed.
func TestMentionOfAFolderOutsideIsNotListed(t *testing.T) {
	h := newHarness(t, text("ok"))
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "private-name.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(h.cwd, "elsewhere")); err != nil {
		t.Fatal(err)
	}
	s := h.session()
	run(t, s, "list @"+outside+"/ and @elsewhere/")
	all := event.JoinText(userMessage(t, s).Content)
	for _, w := range []string{
		"[dsh: @" + outside + "/ not listed: outside the workspace]",
		"[dsh: @elsewhere/ not listed: outside the workspace]",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("the user message lacks %q:\n%s", w, all)
		}
	}
	if strings.Contains(all, "private-name") {
		t.Fatalf("listed a folder outside the workspace:\n%s", all)
	}
}
