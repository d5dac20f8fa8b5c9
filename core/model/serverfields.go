package model

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/dsh-dev/dsh/core/jsonx"
)

// serverFields gathers the members of a streamed reply's deltas that the
// chat-completions client does not read, so that the result blocks of
// DeepSeek's server-side web tools can be sent back unchanged. Its guide
// says to return "the blocks" as received; how the Chat Completions API
// carries them is not in the sources dsh was built from (README, Known
// gaps), so every unknown member is kept, by name, in the order first
// seen: an array's elements are appended (the server may stream a list a
// few blocks at a time), a string's fragments joined, any other value
// replaced by the last one sent. Values are kept as the server's bytes.
type serverFields struct {
	order []string
	byKey map[string]*serverField
}

type serverField struct {
	elems [][]byte // array elements, verbatim
	str   strings.Builder
	last  json.RawMessage
	kind  byte // '[' array, '"' string, 0 other
}

// knownDelta are the delta members the client reads itself.
var knownDelta = []string{"role", "content", "reasoning_content", "reasoning", "tool_calls"}

// chunk takes the deltas of one chunk. It decodes the chunk a second time,
// as raw members: only when the web tools are on, so the common path
// decodes every frame once.
func (f *serverFields) chunk(data []byte) error {
	var c struct {
		Choices []struct {
			Index int                        `json:"index"`
			Delta map[string]json.RawMessage `json:"delta"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return err
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		keys := make([]string, 0, len(ch.Delta))
		for k := range ch.Delta {
			keys = append(keys, k)
		}
		slices.Sort(keys) // a map has no order; a chunk's new members are kept sorted
		for _, k := range keys {
			if !slices.Contains(knownDelta, k) {
				if err := f.add(k, ch.Delta[k]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (f *serverFields) add(key string, v json.RawMessage) error {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	if f.byKey == nil {
		f.byKey = map[string]*serverField{}
	}
	fd := f.byKey[key]
	if fd == nil {
		fd = &serverField{}
		f.byKey[key] = fd
		f.order = append(f.order, key)
	}
	switch v[0] {
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(v, &elems); err != nil {
			return err
		}
		fd.kind = '['
		for _, e := range elems {
			fd.elems = append(fd.elems, slices.Clone(e))
		}
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return err
		}
		fd.kind = '"'
		fd.str.WriteString(s)
	default:
		fd.kind = 0
		fd.last = slices.Clone(v)
	}
	return nil
}

// fields are the gathered members, nil when there were none (an empty
// array or string counts as none).
func (f *serverFields) fields() []ServerField {
	var out []ServerField
	for _, k := range f.order {
		fd := f.byKey[k]
		var v []byte
		switch fd.kind {
		case '[':
			if len(fd.elems) == 0 {
				continue
			}
			v = append(v, '[')
			for i, e := range fd.elems {
				if i > 0 {
					v = append(v, ',')
				}
				v = append(v, e...)
			}
			v = append(v, ']')
		case '"':
			if fd.str.Len() == 0 {
				continue
			}
			v = jsonx.AppendString(nil, fd.str.String(), true)
		default:
			v = fd.last
		}
		out = append(out, ServerField{Name: k, Value: v})
	}
	return out
}
