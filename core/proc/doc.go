// Package proc starts and ends the child processes dsh owns: agent
// runtimes (sdkrpc/client, subagent), MCP stdio servers, and the commands
// the model runs (core/tool's bash). It is the one place that knows how a
// child is spawned so that it cannot outlive us and how it is closed.
//
// Every child gets:
//   - a process group of its own (Config.NewSession: a session of its own),
//     so signals reach the tools it started, not just the child;
//   - on Linux, a parent-death signal (PR_SET_PDEATHSIG, SIGKILL by
//     default), so a SIGKILLed dsh takes its direct children with it;
//   - a bounded tail of its stderr for error messages (StderrTail);
//   - one goroutine that reaps it (Done, State);
//   - the close ladder (Stop): stdin EOF, then SIGTERM to the group, then
//     SIGKILL to the group, each step bounded; a done ctx skips to SIGKILL.
//
// Commands the model runs go one step further: they run under the reaper
// (RunReaper, the binary's hidden subcommand), a child subreaper that ends
// every descendant of the command however it detached (setsid, double
// fork) when the command ends, is cancelled, or dsh dies.
//
// Processes started with plain os/exec elsewhere (MCP's CommandTransport)
// adopt the same spawn rules with Isolate.
package proc
