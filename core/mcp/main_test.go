package mcp

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-dev/dsh/core/mcp/mcptest"
)

// TestMain doubles as the stdio test server: a test starts this binary
// with MCPTEST_SERVE=1 and it serves mcptest on stdin/stdout.
func TestMain(m *testing.M) {
	if os.Getenv("MCPTEST_SERVE") == "1" {
		mcptest.Main()
	}
	goleak.VerifyTestMain(m)
}
