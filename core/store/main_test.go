package store

import (
	"bufio"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-dev/dsh/core/event"
)

// holderEnv makes the test binary act as a lease holder in a child process:
// its value is the session root and holderIDEnv holds the id. The child opens the session for writing,
// prints "ready", waits for a line (or EOF) on stdin, closes the log and
// prints "closed". Tests use it to exercise the flock lease across two
// real processes.
const (
	holderEnv   = "DSH_STORE_TEST_LEASE_HOLDER"
	holderIDEnv = "DSH_STORE_TEST_LEASE_ID"
)

func TestMain(m *testing.M) {
	if v, ok := os.LookupEnv(holderEnv); ok {
		os.Exit(leaseHolder(v, os.Getenv(holderIDEnv)))
	}
	goleak.VerifyTestMain(m)
}

func leaseHolder(root, id string) int {
	l, _, err := New(root).Open(id)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("ready")
	// Append one event so the holder is a real writer, not just a locker.
	ev := event.New(event.TypeSessionTitle, event.SessionTitle{Title: "held"})
	ev.Seq = l.NextSeq()
	if err := l.Append(ev); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	if err := l.Close(); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("closed")
	return 0
}
