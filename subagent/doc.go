// Package subagent is the subagent gateway: the model-facing `subagent`
// tool and the providers it delegates to — a child session in this runtime
// (inproc), a child `dsh sdk` driven over the SDK JSON-RPC protocol
// (dsh-sdk), or any ACP agent driven over ACP (dsh-acp, or a configured
// command). It follows the original's subagent tool and its two
// out-of-process backends (spec dsh-protocols.md §5), and adds process
// pooling, which the original lacks.
//
// # Configuration
//
// Providers come from the config file's "subagents" object:
//
//	"subagents": {
//	  "default": "dsh-sdk",
//	  "claude":  {"protocol": "acp", "command": ["claude-agent-acp"], "env": {"ANTHROPIC_API_KEY": "..."}},
//	  "scratch": {"protocol": "inproc", "cwd": "/tmp/scratch"},
//	  "dsh-sdk": {"pool": false}
//	}
//
// Every other key names a provider: an object with "protocol" ("inproc" |
// "sdk" | "acp"), "command" (argv; omitted for sdk/acp: this dsh binary
// with `sdk`/`acp`), "env" (added to the child's environment), "cwd" (an
// absolute, existing directory; default: the parent session's cwd), "pool"
// (reuse child processes; default true for sdk/acp) and "idleTimeout" (a Go
// duration such as "90s"; how long a pooled child may sit idle, default
// 60s). Unknown fields are errors. The key "default", whose value is a
// string, names the default provider; so "default" cannot be a provider
// name. Three providers are built in and may be tuned (env, cwd, pool,
// idleTimeout) but not re-pointed: inproc, dsh-sdk and dsh-acp. The default
// provider is NewRegistry's defaultName if given, else the config's
// "default", else inproc — the cheapest, and the only one that needs no
// process.
//
// # The child's environment
//
// An out-of-process child gets the parent's environment scrubbed: every
// credential-like variable (tool.ScrubEnv) and every DSH_* variable is
// removed, as the original does, so a child never inherits keys or settings
// by accident. Then:
//
//   - for providers that run this dsh binary (dsh-sdk, dsh-acp, and
//     configured sdk/acp providers without "command") — and only for them —
//     what the child needs to reach the same model and store:
//     DSH_PROVIDER, DSH_MODEL, DSH_REASONING_EFFORT (from the parent
//     session's config), DSH_PERMISSION_MODE (the parent session's mode),
//     DSH_SESSION_ROOT, DSH_HOME, DSH_CONFIG, DSH_SCRIPT, DSH_LOG_LEVEL,
//     DSH_STEP_CAP, DSH_FIRST_DATA_TIMEOUT, DSH_STALL_TIMEOUT,
//     DEEPSEEK_BASE_URL, OPENAI_BASE_URL, and what limits its tools as
//     the parent's are: DSH_SANDBOX, DSH_SANDBOX_NETWORK,
//     DSH_SANDBOX_HIDE_PATHS, DSH_SANDBOX_WRITABLE_PATHS, DSH_COMMAND_ENV,
//     DSH_WEB_FETCH_ALLOW_PRIVATE, DSH_ALLOWED_TOOLS, DSH_DISALLOWED_TOOLS,
//     DSH_MCP_START_WAIT (from the parent's environment, overridden by
//     SetDshEnv: the dsh binary sets the sandbox setting and the tool
//     lists' flag entries there), and the API key variable of the parent's
//     provider (DEEPSEEK_API_KEY or OPENAI_API_KEY). The key is the one
//     exception to the credential scrub: the child is our own binary doing
//     the parent's work with the parent's model, so it is trusted as the
//     parent is. A third-party agent never gets it; give it its keys with
//     its config "env".
//   - DSH_DELEGATION_DEPTH=<parent depth + 1>, for every out-of-process
//     child: a dsh child records it as the depth of its sessions, so the
//     depth cap holds across processes.
//   - the provider's configured "env", last, so it wins.
//
// # Runs, cancellation and pooling
//
// A call records subagent/start in the parent's log before the run and
// subagent/end after it (Local is true for inproc, whose child session also
// lives in this runtime). Between them, a remote child's tool calls and
// completed messages are recorded as subagent/progress (progress.go), so
// the parent's doors show what it is doing while it runs; an inproc
// child's own events are in this runtime already. The child's permission
// requests are answered by the parent session's gate (Session.Decide), so
// the parent's mode, rules and client decide for the child. Cancelling the parent's turn cancels
// the child (core cancel, SDK session/cancel, ACP session/cancel); a child
// that has not stopped within a second is killed, so the call returns
// within 2 s and no process survives it.
//
// An ACP child is driven over acp/wire (the ACP door's connection layer),
// which handles its session/update notifications on the reading goroutine
// in wire order: an agent streaming thousands of chunks is slowed by the
// pipe, never disconnected (the Go SDK's own client queues 1,024 and then
// drops the connection).
//
// Out-of-process children are pooled per (parent session, provider) when
// the provider allows: a finished child waits idle for the next call of the
// same parent session, which then pays no spawn or handshake (a fresh SDK
// session id, or a fresh ACP session/new, per call). Idle children are
// closed after the idle timeout, a child whose run failed or was cancelled
// uncleanly is never reused, and Registry.Close closes every child.
package subagent
