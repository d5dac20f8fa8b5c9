package protocol

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"testing"

	"github.com/dsh-dev/dsh/core/event"
)

// The decoders below take params straight off the wire. Whatever a host
// sends, they must not panic, a failure must say something, and a success
// must hand the server only values it can use as they are.

// FuzzParseInitializeParams decodes arbitrary bytes as initialize params.
func FuzzParseInitializeParams(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"cwd":"/w","provider":"deepseek-official","model":"deepseek-flash"}`,
		`{"maxTokens":1}`, `{"maxTokens":9007199254740991}`, `{"maxTokens":9007199254740992}`,
		`{"maxTokens":1e3}`, `{"maxTokens":5.0}`, `{"maxTokens":1.5}`, `{"maxTokens":-1}`, `{"maxTokens":"10"}`,
		`{"maxTokens":null}`, `{"maxTokens":1e400}`, `{"reasoningEffort":""}`, `{"reasoningEffort":null}`,
		`{"reasoningEffort":"high"}`, `{"cwd":5}`, `{"cwd":null}`, `{"capabilities":{"permissions":true}}`,
		`{"capabilities":[]}`, `{"capabilities":{"permissions":"yes"}}`, `null`, `[]`, `"x"`, ``, `{`,
		`{"cwd":"\u0000"}`, "{\"cwd\":\"\xff\"}", `{"model":"m","model":"n"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := ParseInitializeParams(raw)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if p.MaxTokens < 0 || p.MaxTokens > maxSafeInteger {
			t.Fatalf("maxTokens %d accepted", p.MaxTokens)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil || m == nil {
			t.Fatalf("accepted params that are not an object: %q", raw)
		}
		if _, ok := m["reasoningEffort"]; ok && p.ReasoningEffort == "" {
			t.Fatalf("an empty reasoningEffort was accepted: %q", raw)
		}
		if _, ok := m["maxTokens"]; ok && p.MaxTokens == 0 {
			t.Fatalf("maxTokens 0 was accepted: %q", raw)
		}
	})
}

// FuzzParseSessionPromptParams decodes arbitrary bytes as session/prompt
// params and, when they pass, their content blocks, as the server does.
func FuzzParseSessionPromptParams(f *testing.F) {
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nfake"))
	for _, s := range []string{
		`{"sessionId":"s","contentBlocks":[{"type":"text","text":"hi"}]}`,
		`{"sessionId":"s","contentBlocks":[]}`,
		`{"sessionId":"","contentBlocks":[]}`,
		`{"sessionId":5,"contentBlocks":[]}`,
		`{"sessionId":"s","contentBlocks":{}}`,
		`{"sessionId":"s","contentBlocks":null}`,
		`{"sessionId":"s"}`,
		`{"sessionId":"../../etc/passwd","contentBlocks":[{"type":"text","text":"x"}]}`,
		`{"sessionId":"a\u0000b","contentBlocks":[{"type":"text","text":"x"}]}`,
		`{"sessionId":"s","contentBlocks":[{"type":"image","data":"` + png + `","mimeType":"image/png"}]}`,
		`{"sessionId":"s","contentBlocks":[{"type":"image","data":"` + png + "\\n" + `","mimeType":"image/png"}]}`,
		`{"sessionId":"s","contentBlocks":[{"type":"image","data":"","mimeType":"image/png"}]}`,
		`{"sessionId":"s","contentBlocks":[{"type":"image","data":"AAAA","mimeType":"image/tiff"}]}`,
		`{"sessionId":"s","contentBlocks":[{"type":"image","attachment":{"attachmentId":"sha256:00"}}]}`,
		`{"sessionId":"s","contentBlocks":[{"type":"image","attachment":{}}]}`,
		`{"sessionId":"s","contentBlocks":[{"type":"audio","data":"AAAA"}]}`,
		`{"sessionId":"s","contentBlocks":[{"type":"text","text":5}]}`,
		`{"sessionId":"s","contentBlocks":[{"type":null}]}`,
		`{"sessionId":"s","contentBlocks":[1,"x",null,[]]}`,
		"{\"sessionId\":\"s\",\"contentBlocks\":[{\"type\":\"text\",\"text\":\"\xff\"}]}",
		`null`, `[]`, ``, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := ParseSessionPromptParams(raw)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if p.SessionID == "" {
			t.Fatalf("empty sessionId accepted: %q", raw)
		}
		checkBlocks(t, p.ContentBlocks)
	})
}

// FuzzParsePromptBlocks decodes arbitrary bytes as one content block, and
// as a list holding it between two good blocks.
func FuzzParsePromptBlocks(f *testing.F) {
	for _, s := range []string{
		`{"type":"text","text":"hi"}`, `{"type":"text"}`, `{"type":"image","data":"AAAA","mimeType":"image/gif"}`,
		`{"type":"image","data":"AAA=","mimeType":"image/webp"}`, `{"type":"image","data":"A","mimeType":"image/png"}`,
		`{"type":"image","data":null,"mimeType":"image/png"}`, `{"type":"image","mimeType":"image/png"}`,
		`{"type":"image","attachment":{"attachmentId":"sha256:ab","mediaType":"image/png","bytes":4}}`,
		`{"type":"tool-call","id":"x"}`, `{"TYPE":"text","text":"x"}`, `{"type":"text","text":"a","text":"b"}`,
		` {"type":"text","text":"x"} `, `[]`, `"text"`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkBlocks(t, []json.RawMessage{raw})
		good := TextBlock("ok")
		checkBlocks(t, []json.RawMessage{good, raw, good})
	})
}

// checkBlocks runs ParsePromptBlocks and checks its contract: a clear error,
// or one usable block per input block.
func checkBlocks(t *testing.T, raw []json.RawMessage) {
	t.Helper()
	blocks, err := ParsePromptBlocks(raw)
	if err != nil {
		if err.Error() == "" {
			t.Fatal("empty error message")
		}
		if blocks != nil {
			t.Fatalf("blocks returned with an error: %+v", blocks)
		}
		return
	}
	if len(blocks) != len(raw) {
		t.Fatalf("%d blocks from %d", len(blocks), len(raw))
	}
	for i, b := range blocks {
		switch b.Block.Type {
		case event.BlockText:
			if b.Image != nil {
				t.Fatalf("block %d: a text block with an image", i)
			}
		case event.BlockImage:
			if b.Image == nil {
				if b.Block.Attachment == nil || b.Block.Attachment.AttachmentID == "" {
					t.Fatalf("block %d: an image block with neither data nor an attachment id", i)
				}
				continue
			}
			if len(b.Image.Data) == 0 || !slices.Contains(ImageMimeTypes, b.Image.MimeType) {
				t.Fatalf("block %d: accepted image %q with %d bytes", i, b.Image.MimeType, len(b.Image.Data))
			}
		default:
			t.Fatalf("block %d: accepted block type %q", i, b.Block.Type)
		}
	}
}
