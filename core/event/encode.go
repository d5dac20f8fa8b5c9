package event

import (
	"bytes"
	"encoding/json"
	"github.com/dsh-dev/dsh/core/jsonx"
	"strconv"
)

// AppendJSON appends the JSON encoding of e to dst: the members of
// json.Marshal in its order, with Data and SurfaceOp copied verbatim rather
// than re-compacted. Every event is encoded at least twice on the hot path
// (the log line, the SDK notification), and json.Marshal spends most of its
// time re-validating the raw data.
//
// The data must be valid JSON — it is when it comes from New (json.Marshal)
// or from a log line the store parsed, and Validate checks events from
// anywhere else. Data holding a raw line break (possible only in hand-made
// events) would break a line-delimited stream, so it goes through
// json.Marshal, which compacts it.
func (e Event) AppendJSON(dst []byte) ([]byte, error) {
	if hasLineBreak(e.Data) || hasLineBreak(e.SurfaceOp) {
		b, err := json.Marshal(e)
		return append(dst, b...), err
	}
	dst = append(dst, `{"type":`...)
	dst = AppendString(dst, e.Type)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = append(dst, `,"time":`...)
	dst = strconv.AppendInt(dst, e.Time, 10)
	dst = append(dst, `,"data":`...)
	if len(e.Data) == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, bytes.TrimSpace(e.Data)...)
	}
	if len(e.SurfaceOp) > 0 {
		dst = append(dst, `,"surfaceOp":`...)
		dst = append(dst, bytes.TrimSpace(e.SurfaceOp)...)
	}
	if len(e.SourceEventSeqs) > 0 {
		dst = append(dst, `,"sourceEventSeqs":[`...)
		for i, s := range e.SourceEventSeqs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, s, 10)
		}
		dst = append(dst, ']')
	}
	if e.Ignorable {
		dst = append(dst, `,"ignorable":true`...)
	}
	return append(dst, '}'), nil
}

// Validate reports whether e can be committed: a type, and data (and
// surfaceOp) that are valid JSON.
func (e Event) Validate() error {
	if e.Type == "" {
		return errEmptyType
	}
	if len(e.Data) > 0 && !json.Valid(e.Data) {
		return errBadData
	}
	if len(e.SurfaceOp) > 0 && !json.Valid(e.SurfaceOp) {
		return errBadData
	}
	return nil
}

func hasLineBreak(raw json.RawMessage) bool {
	return bytes.IndexByte(raw, '\n') >= 0 || bytes.IndexByte(raw, '\r') >= 0
}

// AppendString appends s quoted exactly as encoding/json quotes it.
func AppendString(dst []byte, s string) []byte { return jsonx.AppendString(dst, s, true) }
