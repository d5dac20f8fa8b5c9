package core

import (
	"slices"

	"github.com/dsh-dev/dsh/core/mcp"
)

// ToolListWarnings says which entries of the runtime's allow and deny
// lists match none of the session's tools. Entries naming an MCP server
// that is still starting are not judged yet.
func (s *Session) ToolListWarnings() []string {
	lists := s.rt.cfg.ToolLists
	if lists.Empty() {
		return nil
	}
	ts := s.tools()
	names := slices.Clone(ts.withheld) // not offered, but tools all the same
	for _, t := range ts.tools {
		names = append(names, t.Name())
	}
	starting := map[string]bool{}
	for _, st := range s.MCPStatus() {
		if st.State == mcp.StateStarting {
			starting[st.Name] = true
		}
	}
	return lists.Warnings(names, func(server string) bool { return starting[server] })
}

// ConditionalToolNames are the tools a session adds to the runtime's own
// when it has what they serve: the skill tool (skills) and the MCP
// resource tools (a server with resources). A check of the tool lists
// made before any session exists (dsh config, a door at startup) counts
// them as tools.
func ConditionalToolNames() []string {
	return []string{skillToolName, listResourcesTool{}.Name(), readResourceTool{}.Name()}
}
