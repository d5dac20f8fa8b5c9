package headless

import (
	"os"
	"testing"
)

func TestIsTerminalLinux(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if IsTerminal(null) {
		t.Error("/dev/null is not a terminal on Linux")
	}
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal available: %v", err)
	}
	defer ptmx.Close()
	if !IsTerminal(ptmx) {
		t.Error("a pseudo-terminal is a terminal")
	}
}
