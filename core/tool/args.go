package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// decodeArgs unmarshals a call's arguments into v and turns JSON errors into
// sentences a model can act on. Empty arguments are read as {} so the
// required-field checks give the useful message. Unknown fields are ignored:
// refusing them costs a step and teaches the model nothing.
func decodeArgs(tool string, raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return fmt.Errorf("invalid arguments for %s: expected a JSON object, got %s", tool, preview(raw))
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("invalid arguments for %s: %s must be %s, got %s", tool, te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("invalid arguments for %s: malformed JSON at byte %d: %v", tool, se.Offset, err)
		}
		return fmt.Errorf("invalid arguments for %s: %w", tool, err)
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64", "int32", "uint", "uint64", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return "a " + goKind
}

func preview(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// required reports a missing or empty string argument.
func required(tool, field, value string) error {
	if value == "" {
		return fmt.Errorf("invalid arguments for %s: %s is required", tool, field)
	}
	return nil
}
