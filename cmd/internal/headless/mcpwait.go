package headless

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/dsh-dev/dsh/core"
)

// awaitMCP waits, before the run's first model call, for the session's
// MCP servers still starting (each bounded by its start timeout), saying
// so on stderr, so the model never misses a configured server's tools;
// then warns of tool-list entries that match no tool.
func awaitMCP(ctx context.Context, sess *core.Session, stderr io.Writer) {
	if names := sess.MCPStarting(); len(names) > 0 {
		noun := "server"
		if len(names) > 1 {
			noun = "servers"
		}
		fmt.Fprintf(stderr, "dsh: waiting for MCP %s %s to start (each up to %s)\n", noun, strings.Join(names, ", "), sess.MCPStartTimeout())
		sess.WaitMCP(ctx)
	}
	for _, w := range sess.ToolListWarnings() {
		fmt.Fprintf(stderr, "dsh: warning: %s\n", w)
	}
}
