package main

import (
	"log/slog"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/ext"
	"github.com/dsh-dev/dsh/core/tool"
	"github.com/dsh-dev/dsh/subagent"
)

// configWarnings are the problems of the settings that do not stop dsh:
// hooks of the config file it cannot use, and entries of the tool lists
// that name no tool. dsh config shows them; every door logs them at start
// (the hooks' from buildRuntime, the lists' from logToolListWarnings, or
// for dsh run once its MCP servers are known).
func configWarnings(s Settings) []string {
	var out []string
	_, diags := ext.ParseHooks(s.Hooks, s.ConfigPath, ext.ScopeUser)
	for _, d := range diags {
		out = append(out, "config file: hook not used: "+d.Msg)
	}
	return append(out, toolListWarnings(s)...)
}

// toolListWarnings are the entries of the allow and deny lists that name
// no tool dsh has. MCP tools (mcp__server__tool) are not judged: their
// servers' tools are known only once a session has started them, and an
// editor or SDK host may bring more servers with a session.
func toolListWarnings(s Settings) []string {
	if s.ToolLists.Empty() {
		return nil
	}
	names := append(core.ConditionalToolNames(), subagent.ToolName)
	for _, t := range tool.Builtins() {
		names = append(names, t.Name())
	}
	return s.ToolLists.Warnings(names, func(string) bool { return true })
}

// logToolListWarnings logs the tool lists' warnings on stderr, for the
// doors whose stdout is a protocol (dsh acp, dsh sdk).
func logToolListWarnings(logger *slog.Logger, s Settings) {
	for _, w := range toolListWarnings(s) {
		logger.Warn("config: " + w)
	}
}
