package outpipe

import (
	"errors"
	"io"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestAbandonFreesWritersOfAStalledPipe: with nobody reading the pipe, a
// write and the writers queued behind it return once Abandon is called.
func TestAbandonFreesWritersOfAStalledPipe(t *testing.T) {
	r, w := io.Pipe()
	p := New(w)
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := p.Write([]byte("line\n"))
			errs <- err
		}()
	}
	p.Abandon()
	for range 3 {
		if err := <-errs; !errors.Is(err, ErrAbandoned) {
			t.Fatalf("write after abandon: %v", err)
		}
	}
	if _, err := p.Write([]byte("x")); !errors.Is(err, ErrAbandoned) {
		t.Fatalf("later write: %v", err)
	}
	// The stuck write ends when the pipe does.
	_ = r.Close()
	<-p.Stopped()
}

// TestWritesArriveWholeAndInOrder: a reading client gets every write.
func TestWritesArriveWholeAndInOrder(t *testing.T) {
	r, w := io.Pipe()
	p := New(w)
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	buf := []byte("a\n")
	for _, s := range []string{"a\n", "b\n", "c\n"} {
		copy(buf, s) // the caller reuses its buffer
		if n, err := p.Write(buf); n != 2 || err != nil {
			t.Fatalf("write: %d %v", n, err)
		}
	}
	p.Abandon()
	<-p.Stopped()
	_ = w.Close()
	if s := <-got; s != "a\nb\nc\n" {
		t.Fatalf("read %q", s)
	}
}
