package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/tool"
)

// Bounds of one result before the loop's own bound on text.
const (
	maxImages     = 8
	maxImageBytes = 20 << 20
)

// convertResult turns an MCP result into a tool result: text as text;
// images to the model when it takes them (else a placeholder saying so);
// audio, resource links and embedded resources as text; structuredContent
// as JSON when the text does not already carry it; isError as a tool
// error the model sees.
func convertResult(res *sdk.CallToolResult, env *tool.Env, t *Tool) tool.Result {
	var out []event.ContentBlock
	var texts []string
	images := 0
	add := func(s string) {
		texts = append(texts, s)
		if n := len(out); n > 0 && out[n-1].Type == event.BlockText {
			out[n-1].Text += "\n" + s
			return
		}
		out = append(out, event.Text(s))
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			add(c.Text)
		case *sdk.ImageContent:
			images++
			out = append(out, imageBlocks(c.MIMEType, c.Data, env, images, t)...)
		case *sdk.AudioContent:
			add(fmt.Sprintf("[audio %s, %d bytes: dsh does not pass audio to the model]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			add(resourceLinkText(c))
		case *sdk.EmbeddedResource:
			if r := c.Resource; r != nil {
				if len(r.Blob) > 0 && strings.HasPrefix(r.MIMEType, "image/") {
					images++
					add("Resource " + r.URI + ":")
					out = append(out, imageBlocks(r.MIMEType, r.Blob, env, images, t)...)
					continue
				}
				add(resourceText(r))
			}
		default:
			add(fmt.Sprintf("[content of type %T not shown]", c))
		}
	}
	if res.StructuredContent != nil {
		if js, err := json.Marshal(res.StructuredContent); err == nil && !carried(js, texts) {
			add("structuredContent: " + string(js))
		}
	}
	if len(out) == 0 {
		if res.IsError {
			add(fmt.Sprintf("the MCP server %s reported an error for %s without a message", t.Server(), t.RemoteName()))
		} else {
			add("(no output)")
		}
	}
	return tool.Result{Content: out, IsError: res.IsError}
}

// carried reports whether one of the texts already is the JSON js (the
// MCP spec asks servers to send structured content as text too).
func carried(js []byte, texts []string) bool {
	for _, s := range texts {
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(strings.TrimSpace(s))) == nil {
			var a, b any
			if json.Unmarshal(buf.Bytes(), &a) == nil && json.Unmarshal(js, &b) == nil {
				x, _ := json.Marshal(a)
				y, _ := json.Marshal(b)
				if bytes.Equal(x, y) {
					return true
				}
			}
		}
	}
	return false
}

func imageBlocks(mime string, data []byte, env *tool.Env, n int, t *Tool) []event.ContentBlock {
	desc := fmt.Sprintf("[image %s, %d bytes from %s", mime, len(data), t.Name())
	switch {
	case n > maxImages:
		return []event.ContentBlock{event.Text(desc + fmt.Sprintf(": not shown, only the first %d images of a result are]", maxImages))}
	case len(data) > maxImageBytes:
		return []event.ContentBlock{event.Text(desc + fmt.Sprintf(": too large to attach, the limit is %d MiB]", maxImageBytes>>20))}
	case env == nil || !env.ModelImages || env.SaveAttachment == nil:
		return []event.ContentBlock{event.Text(desc + ": the model of this session cannot view images]")}
	}
	// The same checks as read's: decoded size bounded, scaled to what the
	// model takes (a 100000x100000 PNG is a note, not an image).
	mime, data, _, _, note, err := tool.FitImage(mime, data)
	if err != nil {
		return []event.ContentBlock{event.Text(desc + ": not shown: " + err.Error() + "]")}
	}
	att, err := env.SaveAttachment(mime, data)
	if err != nil || att == nil {
		return []event.ContentBlock{event.Text(desc + fmt.Sprintf(": could not be attached: %v]", err))}
	}
	return []event.ContentBlock{
		event.Text(fmt.Sprintf("Image (%s, %dx%d, %d bytes%s):", mime, att.Width, att.Height, len(data), noteSuffix(note))),
		{Type: event.BlockImage, Attachment: att},
	}
}

func resourceLinkText(l *sdk.ResourceLink) string {
	s := "Resource link: " + l.URI
	if l.Name != "" {
		s += " (" + l.Name + ")"
	}
	if l.MIMEType != "" {
		s += " " + l.MIMEType
	}
	if l.Description != "" {
		s += ": " + short(l.Description, 500)
	}
	return s
}

func resourceText(r *sdk.ResourceContents) string {
	if len(r.Blob) > 0 {
		return fmt.Sprintf("Resource %s (%s, %d bytes of binary data, not shown)", r.URI, r.MIMEType, len(r.Blob))
	}
	head := "Resource " + r.URI
	if r.MIMEType != "" {
		head += " (" + r.MIMEType + ")"
	}
	return head + ":\n" + r.Text
}

func noteSuffix(note string) string {
	if note == "" {
		return ""
	}
	return "; " + note
}
