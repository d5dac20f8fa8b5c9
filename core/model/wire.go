package model

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/dsh-dev/dsh/core/jsonx"
	"strconv"
)

// This file writes the request body of POST /chat/completions by hand.
//
// Why not encoding/json on structs: DeepSeek's prefix cache only hits when
// the replayed history is byte-identical to what was sent before, and the
// thinking mode 400s when an assistant message lacks reasoning_content (even
// ""). A hand-written encoder makes both properties obvious and testable:
// fields appear in one fixed order, reasoning_content is written whenever
// the dialect asks for it (never "omitempty"), tool-call arguments are the
// raw strings as streamed, and tool schemas are copied verbatim (encoding/json
// would re-compact a json.RawMessage).

// dialect is what differs between the DeepSeek API and a generic
// OpenAI-compatible endpoint.
type dialect int

const (
	dialectDeepSeek dialect = iota + 1
	dialectOpenAI
)

// bodyPlan is the resolved per-request settings the encoder needs.
type bodyPlan struct {
	dialect   dialect
	maxTokens int    // 0 = omit
	effort    string // reasoning_effort to send; "" = omit
	// thinking is the DeepSeek thinking switch: "enabled", "disabled" or ""
	// (omit the field).
	thinking string
	// reasoningAlways: every assistant message carries reasoning_content
	// (DeepSeek thinking mode). Otherwise the key is written only for
	// messages that have reasoning (openai-compatible) or never (DeepSeek
	// with thinking disabled, reasoningNever).
	reasoningAlways bool
	reasoningNever  bool
	// webTools declares DeepSeek's server-side web tools after the
	// request's own.
	webTools bool
}

// webToolDecls are DeepSeek's server-side web tools as its web tools guide
// declares them (the form documented for its Messages API; the guide's
// Chat Completions section was not available to check, see README's
// Known gaps). Fixed bytes: part of the cached prefix.
const webToolDecls = `{"type":"deepseek_web_search","name":"deepseek_web_search"},{"type":"deepseek_read_url","name":"deepseek_read_url"}`

// encodeBody writes the request body for req under plan. It validates the
// parts of the request whose mistakes would otherwise surface as an opaque
// 400 from the server.
func encodeBody(req *Request, plan bodyPlan) ([]byte, error) {
	if req.Model == "" {
		return nil, invalidf("request has no model id")
	}
	if len(req.Messages) == 0 {
		return nil, invalidf("request has no messages")
	}
	b := make([]byte, 0, estimateSize(req))
	b = append(b, `{"model":`...)
	b = appendString(b, req.Model)
	b = append(b, `,"messages":[`...)
	for i := range req.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		b, err = appendMessage(b, &req.Messages[i], i, plan)
		if err != nil {
			return nil, err
		}
	}
	b = append(b, ']')
	if len(req.Tools) > 0 || plan.webTools {
		b = append(b, `,"tools":[`...)
		for i := range req.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			b, err = appendTool(b, &req.Tools[i])
			if err != nil {
				return nil, err
			}
		}
		if plan.webTools {
			if len(req.Tools) > 0 {
				b = append(b, ',')
			}
			b = append(b, webToolDecls...)
		}
		b = append(b, ']')
	}
	// DeepSeek's thinking mode does not support tool_choice (its V4 guide;
	// "required" or a named function is refused): it is never sent there.
	if req.ToolChoice != "" && len(req.Tools) > 0 && plan.thinking != "enabled" {
		b = append(b, `,"tool_choice":`...)
		b = appendString(b, req.ToolChoice)
	}
	if plan.maxTokens > 0 {
		b = append(b, `,"max_tokens":`...)
		b = strconv.AppendInt(b, int64(plan.maxTokens), 10)
	}
	if plan.thinking != "" {
		b = append(b, `,"thinking":{"type":`...)
		b = appendString(b, plan.thinking)
		b = append(b, '}')
	}
	if plan.effort != "" {
		b = append(b, `,"reasoning_effort":`...)
		b = appendString(b, plan.effort)
	}
	b = append(b, `,"stream":true,"stream_options":{"include_usage":true}}`...)
	return b, nil
}

func estimateSize(req *Request) int {
	n := 256
	for i := range req.Messages {
		m := &req.Messages[i]
		n += 64 + len(m.Content) + len(m.Reasoning) + len(m.ToolCallID)
		for _, tc := range m.ToolCalls {
			n += 64 + len(tc.ID) + len(tc.Name) + len(tc.Arguments)
		}
		for _, f := range m.ServerFields {
			n += 8 + len(f.Name) + len(f.Value)
		}
		for _, im := range m.Images {
			n += 64 + base64.StdEncoding.EncodedLen(len(im.Data))
		}
	}
	for i := range req.Tools {
		n += 64 + len(req.Tools[i].Name) + len(req.Tools[i].Description) + len(req.Tools[i].Parameters)
	}
	return n
}

func appendMessage(b []byte, m *Message, i int, plan bodyPlan) ([]byte, error) {
	switch m.Role {
	case "system", "user", "assistant", "tool":
	default:
		return nil, invalidf("message %d has unknown role %q (want system, user, assistant or tool)", i, m.Role)
	}
	if len(m.Images) > 0 && m.Role != "user" {
		return nil, invalidf("message %d (%s) has images; the chat completions API accepts images only on user messages", i, m.Role)
	}
	if len(m.ToolCalls) > 0 && m.Role != "assistant" {
		return nil, invalidf("message %d (%s) has tool calls; only assistant messages may", i, m.Role)
	}
	b = append(b, `{"role":`...)
	b = appendString(b, m.Role)
	switch m.Role {
	case "tool":
		if m.ToolCallID == "" {
			return nil, invalidf("message %d is a tool result without a tool call id", i)
		}
		b = append(b, `,"tool_call_id":`...)
		b = appendString(b, m.ToolCallID)
		b = append(b, `,"content":`...)
		b = appendString(b, m.Content)
	case "user":
		b = append(b, `,"content":`...)
		if len(m.Images) == 0 {
			b = appendString(b, m.Content)
			break
		}
		b = append(b, '[')
		first := true
		if m.Content != "" {
			b = append(b, `{"type":"text","text":`...)
			b = appendString(b, m.Content)
			b = append(b, '}')
			first = false
		}
		for j, im := range m.Images {
			if im.MediaType == "" {
				return nil, invalidf("message %d image %d has no media type", i, j)
			}
			if len(im.Data) == 0 {
				return nil, invalidf("message %d image %d is empty", i, j)
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, `{"type":"image_url","image_url":{"url":"data:`...)
			b = appendStringBody(b, im.MediaType)
			b = append(b, `;base64,`...)
			b = base64.StdEncoding.AppendEncode(b, im.Data)
			b = append(b, `"}}`...)
		}
		b = append(b, ']')
	case "assistant":
		b = append(b, `,"content":`...)
		b = appendString(b, m.Content)
		if !plan.reasoningNever && (plan.reasoningAlways || m.Reasoning != "") {
			b = append(b, `,"reasoning_content":`...)
			b = appendString(b, m.Reasoning)
		}
		if len(m.ToolCalls) > 0 {
			b = append(b, `,"tool_calls":[`...)
			for j, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, invalidf("message %d tool call %d needs an id and a name", i, j)
				}
				if j > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"id":`...)
				b = appendString(b, tc.ID)
				b = append(b, `,"type":"function","function":{"name":`...)
				b = appendString(b, tc.Name)
				b = append(b, `,"arguments":`...)
				b = appendString(b, tc.Arguments)
				b = append(b, `}}`...)
			}
			b = append(b, ']')
		}
		for j, f := range m.ServerFields {
			if f.Name == "" || !json.Valid(f.Value) {
				return nil, invalidf("message %d server field %d is not a named JSON value", i, j)
			}
			b = append(b, ',')
			b = appendString(b, f.Name)
			b = append(b, ':')
			b = append(b, f.Value...)
		}
	default: // system
		b = append(b, `,"content":`...)
		b = appendString(b, m.Content)
	}
	return append(b, '}'), nil
}

func appendTool(b []byte, t *ToolSpec) ([]byte, error) {
	if t.Name == "" {
		return nil, invalidf("tool spec without a name")
	}
	params := []byte(t.Parameters)
	if len(params) == 0 {
		params = []byte(`{"type":"object","properties":{}}`)
	} else if !json.Valid(params) {
		return nil, invalidf("tool %q has an invalid JSON schema", t.Name)
	}
	b = append(b, `{"type":"function","function":{"name":`...)
	b = appendString(b, t.Name)
	b = append(b, `,"description":`...)
	b = appendString(b, t.Description)
	b = append(b, `,"parameters":`...)
	b = append(b, params...)
	return append(b, `}}`...), nil
}

func invalidf(format string, args ...any) *Error {
	return &Error{Class: ClassInvalid, Message: fmt.Sprintf(format, args...)}
}

// appendString appends s as encoding/json would quote it, so the request
// bytes match what a json.Marshal-based peer would write.
func appendString(b []byte, s string) []byte { return jsonx.AppendString(b, s, true) }

func appendStringBody(b []byte, s string) []byte { return jsonx.AppendStringBody(b, s, true) }
