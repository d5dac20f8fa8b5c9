//go:build !linux

package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// RunReaper runs o.Argv with our stdio and returns its exit code. Outside
// Linux there is no child subreaper: only the command's process group is
// ended (by the caller), not what detached from it.
func RunReaper(o ReaperOptions, stderr io.Writer) int {
	if o.Setup != nil {
		if _, err := o.Setup(o.Argv); err != nil {
			fmt.Fprintf(stderr, "dsh: %v\n", err)
			return 126
		}
	}
	cmd := exec.Command(o.Argv[0], o.Argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	default:
		fmt.Fprintf(stderr, "dsh: %v\n", err)
		return 126
	}
}
