package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/dsh-dev/dsh/core/event"
)

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER (2^53 - 1).
const maxSafeInteger = 1<<53 - 1

// ParseInitializeParams decodes initialize params strictly, with the
// original's messages for the checks it makes (reasoningEffort first, then
// maxTokens) and clear messages of ours for the rest. raw must be a JSON
// object (the dispatcher turns anything else into `{}`).
//
// Absent cwd, provider and model come back empty: defaulting them (process
// cwd, DefaultProvider, the configured model) is the server's decision.
// Unknown members (a clientInfo, say) are ignored. JSON null counts as
// present for maxTokens and reasoningEffort, so it is rejected, as it is by
// the original's `!== undefined` checks.
func ParseInitializeParams(raw json.RawMessage) (InitializeParams, error) {
	var p InitializeParams
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return p, errors.New("initialize params must be a JSON object")
	}
	if v, ok := m["reasoningEffort"]; ok {
		var s string
		if json.Unmarshal(v, &s) != nil || isNull(v) || s == "" {
			return p, ErrInvalidReasoningEffort
		}
		p.ReasoningEffort = s
	}
	if v, ok := m["maxTokens"]; ok {
		n, ok := safePositiveInteger(v)
		if !ok {
			return p, ErrInvalidMaxTokens
		}
		p.MaxTokens = n
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"cwd", &p.Cwd}, {"provider", &p.Provider}, {"model", &p.Model}} {
		v, ok := m[f.name]
		if !ok || isNull(v) {
			continue
		}
		if json.Unmarshal(v, f.dst) != nil {
			return p, fmt.Errorf("initialize %s must be a string", f.name)
		}
	}
	if v, ok := m["mcpServers"]; ok && !isNull(v) {
		if len(v) == 0 || v[0] != '{' {
			return p, errors.New("initialize mcpServers must be an object of servers by name")
		}
		p.MCPServers = v
	}
	if v, ok := m["capabilities"]; ok && !isNull(v) {
		var c map[string]json.RawMessage
		if json.Unmarshal(v, &c) != nil || c == nil {
			return p, errors.New("initialize capabilities must be an object")
		}
		p.Capabilities = &ClientCapabilities{}
		if pv, ok := c["permissions"]; ok && !isNull(pv) {
			if json.Unmarshal(pv, &p.Capabilities.Permissions) != nil {
				return p, errors.New("initialize capabilities.permissions must be a boolean")
			}
		}
	}
	return p, nil
}

// safePositiveInteger mirrors JavaScript's Number.isSafeInteger(x) && x > 0
// on a JSON number: 5.0 and 1e3 pass (they are integers once parsed), 1.5,
// 0, negatives, 2^53 and non-numbers fail.
func safePositiveInteger(v json.RawMessage) (int64, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || !(v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || f != math.Trunc(f) || f <= 0 || f > maxSafeInteger {
		return 0, false
	}
	return int64(f), true
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// ParseSessionPromptParams decodes session/prompt params: sessionId must be
// a non-empty string and contentBlocks an array (its blocks are checked by
// ParsePromptBlocks).
func ParseSessionPromptParams(raw json.RawMessage) (SessionPromptParams, error) {
	var p SessionPromptParams
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return p, errors.New("session/prompt params must be a JSON object")
	}
	if json.Unmarshal(m["sessionId"], &p.SessionID) != nil || p.SessionID == "" {
		return p, errors.New("session/prompt sessionId must be a non-empty string")
	}
	if v := bytes.TrimSpace(m["contentBlocks"]); len(v) == 0 || v[0] != '[' || json.Unmarshal(v, &p.ContentBlocks) != nil {
		return p, errors.New("session/prompt contentBlocks must be an array")
	}
	return p, nil
}

// ParseSessionIDParams decodes the `{sessionId}` params of session/cancel
// and session/close; method names the request in the error.
func ParseSessionIDParams(method string, raw json.RawMessage) (string, error) {
	var m map[string]json.RawMessage
	var id string
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return "", fmt.Errorf("%s params must be a JSON object", method)
	}
	if json.Unmarshal(m["sessionId"], &id) != nil || id == "" {
		return "", fmt.Errorf("%s sessionId must be a non-empty string", method)
	}
	return id, nil
}

// ParseSessionCompactParams decodes the params of session/compact.
func ParseSessionCompactParams(raw json.RawMessage) (SessionCompactParams, error) {
	var p SessionCompactParams
	id, err := ParseSessionIDParams(MethodSessionCompact, raw)
	if err != nil {
		return p, err
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	if f, ok := m["focus"]; ok && string(f) != "null" && json.Unmarshal(f, &p.Focus) != nil {
		return p, fmt.Errorf("%s focus must be a string", MethodSessionCompact)
	}
	p.SessionID = id
	return p, nil
}

// ParseSessionRewindParams decodes the params of session/rewind: a turn
// (a whole number from 1) or undo, never both.
func ParseSessionRewindParams(raw json.RawMessage) (SessionRewindParams, error) {
	var p SessionRewindParams
	id, err := ParseSessionIDParams(MethodSessionRewind, raw)
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, fmt.Errorf("%s params: %v", MethodSessionRewind, err)
	}
	p.SessionID = id
	switch {
	case p.Undo && p.Turn != 0:
		return p, fmt.Errorf("%s: give turn or undo, not both", MethodSessionRewind)
	case !p.Undo && p.Turn < 1:
		return p, fmt.Errorf("%s turn must be a whole number from 1 (or undo: true)", MethodSessionRewind)
	}
	switch p.Scope {
	case "", "all", "files", "conversation":
	default:
		return p, fmt.Errorf("%s scope %q: want all, files or conversation", MethodSessionRewind, p.Scope)
	}
	return p, nil
}

// ImageMimeTypes are the image MIME types a prompt may carry (the
// original's list).
var ImageMimeTypes = []string{"image/png", "image/jpeg", "image/webp", "image/gif"}

// EncodedImage is an image sent inline in a prompt, to be stored as an
// attachment and replaced by a durable reference before it is enqueued.
type EncodedImage struct {
	MimeType string
	Data     []byte
}

// PromptBlock is one checked prompt content block: a durable block (text,
// or an image already referring to an attachment) or, when Image is set, an
// encoded image.
type PromptBlock struct {
	Block event.ContentBlock
	Image *EncodedImage
}

// ParsePromptBlocks checks every block before any is used, so a bad block
// rejects the whole prompt. Accepted: {type:"text", text} and
// {type:"image", attachment:{...}} (durable), and {type:"image", data,
// mimeType} (encoded; told apart by `data`) whose data is canonical base64
// and whose mimeType is one of ImageMimeTypes.
func ParsePromptBlocks(blocks []json.RawMessage) ([]PromptBlock, error) {
	out := make([]PromptBlock, 0, len(blocks))
	for i, raw := range blocks {
		b, err := parsePromptBlock(raw)
		if err != nil {
			return nil, fmt.Errorf("session/prompt contentBlocks[%d]: %w", i, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// HasEncodedImage reports whether any block is an encoded image.
func HasEncodedImage(blocks []PromptBlock) bool {
	for _, b := range blocks {
		if b.Image != nil {
			return true
		}
	}
	return false
}

func parsePromptBlock(raw json.RawMessage) (PromptBlock, error) {
	var head struct {
		Type     *string         `json:"type"`
		Text     json.RawMessage `json:"text"`
		Data     json.RawMessage `json:"data"`
		MimeType json.RawMessage `json:"mimeType"`
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &head) != nil || head.Type == nil {
		return PromptBlock{}, errors.New("a content block must be an object with a string type")
	}
	switch *head.Type {
	case event.BlockText:
		var s string
		if json.Unmarshal(head.Text, &s) != nil {
			return PromptBlock{}, errors.New("a text block needs a string text")
		}
		return PromptBlock{Block: event.Text(s)}, nil
	case event.BlockImage:
		if head.Data != nil {
			img, err := parseEncodedImage(head.Data, head.MimeType)
			if err != nil {
				return PromptBlock{}, err
			}
			return PromptBlock{Block: event.ContentBlock{Type: event.BlockImage}, Image: img}, nil
		}
		var b event.ContentBlock
		if err := json.Unmarshal(raw, &b); err != nil || b.Attachment == nil || b.Attachment.AttachmentID == "" {
			return PromptBlock{}, errors.New("an image block needs either data and mimeType or an attachment with an attachmentId")
		}
		return PromptBlock{Block: b}, nil
	}
	return PromptBlock{}, fmt.Errorf("block type %q is not accepted in a prompt (text or image)", *head.Type)
}

func parseEncodedImage(data, mime json.RawMessage) (*EncodedImage, error) {
	var mt, s string
	if json.Unmarshal(mime, &mt) != nil || !validImageMime(mt) {
		return nil, fmt.Errorf("image mimeType %s is not supported (image/png, image/jpeg, image/webp or image/gif)", mimeShown(mime))
	}
	if json.Unmarshal(data, &s) != nil {
		return nil, errors.New("image data must be a base64 string")
	}
	if s == "" {
		return nil, errors.New("image data is empty")
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	// The decoder skips \r and \n; re-encoding catches those and any other
	// non-canonical spelling.
	if err != nil || base64.StdEncoding.EncodeToString(b) != s {
		return nil, errors.New("image data must be canonical base64")
	}
	return &EncodedImage{MimeType: mt, Data: b}, nil
}

func validImageMime(m string) bool {
	for _, v := range ImageMimeTypes {
		if m == v {
			return true
		}
	}
	return false
}

func mimeShown(raw json.RawMessage) string {
	if raw == nil {
		return "(missing)"
	}
	return string(raw)
}

// TextBlock is a prompt text block.
func TextBlock(text string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{event.BlockText, text})
	return b
}

// ImageBlock is an encoded prompt image block {type:"image", data, mimeType}.
func ImageBlock(mimeType string, data []byte) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type     string `json:"type"`
		Data     string `json:"data"`
		MimeType string `json:"mimeType"`
	}{event.BlockImage, base64.StdEncoding.EncodeToString(data), mimeType})
	return b
}

// IsReceipt reports whether ev is the enqueue receipt of the user message
// messageID: an agent/inbox/spliced event whose inserted messages include
// it. Clients start collecting a run's notifications at the receipt.
func IsReceipt(ev event.Event, messageID string) bool {
	if ev.Type != event.TypeInboxSpliced {
		return false
	}
	var d struct {
		Inserted []struct {
			ID string `json:"id"`
		} `json:"inserted"`
	}
	if json.Unmarshal(ev.Data, &d) != nil {
		return false
	}
	for _, m := range d.Inserted {
		if m.ID == messageID {
			return true
		}
	}
	return false
}
