package model

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLineBytes caps one SSE line. Tool arguments arrive as single
// data lines and a model writing a large file produces lines of many MB;
// bufio.Scanner's 64 KiB default is the classic failure (spec §1.3).
const DefaultMaxLineBytes = 64 << 20

// errLineTooLong reports an SSE line above the configured cap.
var errLineTooLong = errors.New("SSE line too long")

// lineReader reads SSE lines of any length up to max without copying the
// common short line: it hands out bufio's own slice when the line fits the
// buffer and assembles longer lines in a reusable scratch buffer.
type lineReader struct {
	r    *bufio.Reader
	max  int
	long []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	if max <= 0 {
		max = DefaultMaxLineBytes
	}
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its line ending ("\n", "\r\n"). The
// slice is valid until the following call. A final line without a newline
// is returned before io.EOF.
func (l *lineReader) next() ([]byte, error) {
	l.long = l.long[:0]
	for {
		frag, err := l.r.ReadSlice('\n')
		if len(l.long)+len(frag) > l.max+2 { // +2: the line ending is not content
			return nil, fmt.Errorf("%w: more than %d bytes", errLineTooLong, l.max)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			l.long = append(l.long, frag...)
			continue
		}
		line := frag
		if len(l.long) > 0 {
			l.long = append(l.long, frag...)
			line = l.long
		}
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				return trimEOL(line), nil
			}
			return nil, err
		}
		return trimEOL(line), nil
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// sseField splits an SSE line into field name and value, dropping one
// leading space of the value as the SSE spec says.
func sseField(line []byte) (name, value []byte) {
	i := bytes.IndexByte(line, ':')
	if i < 0 {
		return line, nil
	}
	name, value = line[:i], line[i+1:]
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	return name, value
}

// wireChunk is one chat.completion.chunk. Only the fields we read are
// declared; unknown fields are ignored so servers may add their own.
type wireChunk struct {
	ID      string        `json:"id"`
	Choices []wireChoice  `json:"choices"`
	Usage   *wireUsage    `json:"usage"`
	Error   *wireAPIError `json:"error"`
}

type wireChoice struct {
	Index        int       `json:"index"`
	Delta        wireDelta `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
}

type wireDelta struct {
	Content          *string `json:"content"`
	ReasoningContent *string `json:"reasoning_content"`
	// Reasoning is what some OpenAI-compatible servers (OpenRouter, vLLM
	// with a reasoning parser) call reasoning_content.
	Reasoning *string             `json:"reasoning"`
	ToolCalls []wireToolCallDelta `json:"tool_calls"`
}

type wireToolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireUsage struct {
	PromptTokens         int64  `json:"prompt_tokens"`
	CompletionTokens     int64  `json:"completion_tokens"`
	TotalTokens          *int64 `json:"total_tokens"`
	PromptCacheHitTokens *int64 `json:"prompt_cache_hit_tokens"`
	PromptTokensDetails  *struct {
		CachedTokens *int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens *int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type wireAPIError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
}
