// Package acp is the ACP door (`dsh acp`): it serves the Agent Client
// Protocol, the protocol editors such as Zed speak to coding agents, over
// one stdio connection, with github.com/coder/acp-go-sdk v0.13.5's schema
// types and method constants and its own connection layer (acp/wire).
//
// Everything a client sees is a projection of committed events
// (ARCHITECTURE.md §1, §5): each session's committed events become
// session/update notifications, in commit order, and a prompt is answered
// only after every update of its turn is on the wire. Each session has one
// reader goroutine on its cursor (reader.go), whose updates leave through
// the connection's one bounded, paced outbox (outbox.go); session/load is
// that loop started from the first event, the replay coalesced, then live. No token deltas are
// sent. Tool calls show the facts core recorded with them; no frame
// exceeds acp-go-sdk's 10 MiB line cap (frames.go).
//
// What is served (protocol version 1): initialize, authenticate (no-op, no
// methods), logout (nothing to forget), session/new, session/load (whole
// history replayed before the answer), session/list (cwd filter, 50 a page,
// opaque cursor), session/resume, session/close, session/delete and
// session/fork (unstable), session/prompt, session/cancel,
// session/set_config_option (mode, model, thought_level) and the legacy
// session/set_mode. The MCP servers a client sends (stdio, http, sse) are
// started for the session, and additionalDirectories are more workspace
// roots. Updates: agent_message_chunk, agent_thought_chunk,
// user_message_chunk (replay), tool_call / tool_call_update (kind, title,
// locations, rawInput, status, diff / terminal / text content), plan,
// usage_update, session_info_update, available_commands_update (core's
// slash commands: /init, /mcp, /permissions, /compact and those of the
// project), current_mode_update, config_option_update. Permission requests
// offer allow_once, allow_always, reject_once and reject_always, and carry
// the change as diff content for write, edit and multi_edit. When the client
// advertises them, files go through fs/read_text_file and
// fs/write_text_file and commands run in the client's terminals.
//
// Not served: elicitation, audio.
//
// The door reads and dispatches every frame itself (acp/wire decodes each
// frame once; dispatch.go routes it by the SDK's method constants into the
// SDK's request types): JSON-RPC 2.0 in full (BOM, CRLF, escaped names, ids
// of any type, -32700/-32600, batches), an oversized frame answered -32600,
// a second session/prompt for a busy session refused with -32602 (never
// cancelling the first), $/cancel_request honoured.
//
// Zed settings (settings.json):
//
//	"agent_servers": {
//	  "dsh": {
//	    "command": "dsh",
//	    "args": ["acp"],
//	    "env": { "DEEPSEEK_API_KEY": "sk-..." }
//	  }
//	}
package acp
