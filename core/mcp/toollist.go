package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tools/list answer is decoded whole by the SDK: one entry it cannot
// decode, or one schema deeper than its decoder allows, fails the list
// and so the server. The stdio filter therefore checks each entry of the
// answers to our tools/list requests and leaves out those that would not
// decode, saying which.

// maxSchemaDepth bounds how deeply one tool's entry nests. Real schemas
// nest a few levels; a deeper one costs the model tokens and the SDK a
// deep decode for nothing.
const maxSchemaDepth = 64

// listWatch remembers the ids of our pending tools/list requests, seen
// as the SDK writes them to the server's stdin.
type listWatch struct {
	mu  sync.Mutex
	ids map[string]bool
}

// Write notes a tools/list request among the messages written (one JSON
// message per line) and writes nothing itself.
func (w *listWatch) note(p []byte) {
	if !bytes.Contains(p, []byte(`"tools/list"`)) {
		return
	}
	for _, line := range bytes.Split(p, []byte("\n")) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &req) == nil && req.Method == "tools/list" && len(req.ID) > 0 {
			w.mu.Lock()
			if w.ids == nil {
				w.ids = map[string]bool{}
			}
			w.ids[string(req.ID)] = true
			w.mu.Unlock()
		}
	}
}

// answered reports (and forgets) whether id is one of a tools/list.
func (w *listWatch) answered(id json.RawMessage) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ids[string(id)] {
		return false
	}
	delete(w.ids, string(id))
	return true
}

// pending reports whether some tools/list is unanswered (a deep line may
// be its answer).
func (w *listWatch) pending() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ids) > 0
}

// isList reports whether a deep line may be a tools/list answer, which
// sanitizeTools handles entry by entry.
func (f filter) isList(msg []byte) bool {
	return f.lists.pending() && bytes.Contains(msg, []byte(`"tools"`))
}

// sanitizeTools rewrites a tools/list answer without the entries that do
// not decode as a tool or nest deeper than maxSchemaDepth; the answer as
// it came when every entry is fine.
func (f filter) sanitizeTools(msg []byte) []byte {
	var resp struct {
		JSONRPC string                     `json:"jsonrpc"`
		ID      json.RawMessage            `json:"id"`
		Result  map[string]json.RawMessage `json:"result"`
	}
	var tools []json.RawMessage
	if json.Unmarshal(msg, &resp) != nil || json.Unmarshal(resp.Result["tools"], &tools) != nil {
		return append(msg, '\n') // not a list of entries: the SDK says what is wrong
	}
	kept := tools[:0]
	var dropped []string
	for _, raw := range tools {
		if why := badTool(raw); why != "" {
			dropped = append(dropped, why)
			continue
		}
		kept = append(kept, raw)
	}
	if len(dropped) == 0 {
		return append(msg, '\n')
	}
	note := "left out tools the SDK cannot decode: " + strings.Join(dropped, "; ")
	f.noise(note)
	if f.dropped != nil {
		f.dropped(note)
	}
	resp.Result["tools"], _ = json.Marshal(kept)
	out, err := json.Marshal(resp)
	if err != nil {
		return append(msg, '\n')
	}
	return append(out, '\n')
}

// badTool says why an entry is left out, or "".
func badTool(raw json.RawMessage) string {
	name := toolName(raw)
	if d := depth(raw); d > maxSchemaDepth {
		return fmt.Sprintf("%s (nests %d levels, over %d)", name, d, maxSchemaDepth)
	}
	var t sdk.Tool
	if err := json.Unmarshal(raw, &t); err != nil {
		return fmt.Sprintf("%s (%v)", name, err)
	}
	return ""
}

// toolName is the entry's name for a note, as far as it can be found.
func toolName(raw json.RawMessage) string {
	var n struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &n) == nil && n.Name != "" {
		return short(n.Name, 64)
	}
	return "an entry"
}
