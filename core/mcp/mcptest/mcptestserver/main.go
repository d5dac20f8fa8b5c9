// Command mcptestserver runs dsh's MCP test server on stdio (see package
// mcptest for what it does and the environment that shapes it).
package main

import "github.com/dsh-dev/dsh/core/mcp/mcptest"

func main() { mcptest.Main() }
