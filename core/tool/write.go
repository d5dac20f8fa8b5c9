package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/core/event"
)

const writeSchema = `{"type":"object","properties":{"file_path":{"type":"string","description":"Path of the file to write, absolute or relative to the working directory. Missing parent folders are created."},"content":{"type":"string","description":"The complete new content of the file."}},"required":["file_path","content"],"additionalProperties":false}`

const writeDescription = `Create a file or replace a file's whole content. To overwrite an existing file you must have read it first in this session, and it must not have changed since. Prefer edit for changing part of a file.`

type writeTool struct{}

type writeArgs struct {
	FilePath string  `json:"file_path"`
	Content  *string `json:"content"`
}

func (writeTool) Name() string            { return "write" }
func (writeTool) Description() string     { return writeDescription }
func (writeTool) Schema() json.RawMessage { return json.RawMessage(writeSchema) }
func (writeTool) Kind() Kind              { return KindMutate }
func (writeTool) ParallelSafe() bool      { return false }

func (writeTool) parse(args json.RawMessage, env *Env) (writeArgs, string, error) {
	var a writeArgs
	if err := decodeArgs("write", args, &a); err != nil {
		return a, "", err
	}
	if err := required("write", "file_path", a.FilePath); err != nil {
		return a, "", err
	}
	if a.Content == nil {
		return a, "", errors.New("invalid arguments for write: content is required (use an empty string for an empty file)")
	}
	p, err := resolveIn(env, a.FilePath)
	if err != nil {
		return a, "", fmt.Errorf("write: %w", err)
	}
	return a, p, nil
}

func (t writeTool) Inspect(args json.RawMessage, env *Env) (Access, error) {
	_, p, err := t.parse(args, env)
	if err != nil {
		return Access{}, err
	}
	ws, _ := workspaceOf(env)
	return Access{Paths: []string{p}, Write: true, Title: "Write " + display(ws, p)}, nil
}

func (t writeTool) Run(ctx context.Context, args json.RawMessage, env *Env) Result {
	a, p, err := t.parse(args, env)
	if err != nil {
		return ErrorResult(err.Error())
	}
	ws, _ := workspaceOf(env)
	shown := display(ws, p)
	meta := &event.ToolMeta{Kind: "edit", Paths: []string{p}}
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return withMeta(ErrorResult(fmt.Sprintf("%s is a directory; write needs a file path", shown)), meta)
	}
	if msg := tooLarge(p, shown, "write"); msg != "" {
		return withMeta(ErrorResult(msg), meta)
	}
	files := filesOf(env)
	old, err := files.ReadFile(ctx, p)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return withMeta(ErrorResult(fileError("write", shown, err)), meta)
	}
	if exists {
		if env.Reads == nil {
			return withMeta(ErrorResult("internal error: this session does not track reads, so existing files cannot be overwritten safely"), meta)
		}
		if err := env.Reads.Check(p, old); err != nil {
			return withMeta(ErrorResult("write refused: "+err.Error()), meta)
		}
	}
	content := *a.Content
	if err := files.WriteFile(ctx, p, []byte(content), 0o644); err != nil {
		return withMeta(ErrorResult(fileError("write", shown, err)), meta)
	}
	if env.Reads != nil {
		env.Reads.Record(p, []byte(content), modTimeOf(p))
	}
	lines := lineCount(content)
	var msg string
	if exists {
		o := string(old)
		meta.Diff = diffOf(p, &o, content, UnifiedDiff(shown, o, content))
		msg = fmt.Sprintf("Overwrote %s (%d lines).", shown, lines)
		if o == content {
			msg = fmt.Sprintf("Wrote %s (%d lines); the content was unchanged.", shown, lines)
		}
	} else {
		meta.Diff = diffOf(p, nil, content, UnifiedDiff(shown, "", content))
		msg = fmt.Sprintf("Created %s (%d lines).", shown, lines)
	}
	return withMeta(TextResult(msg), meta)
}

func lineCount(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

func modTimeOf(p string) time.Time {
	if fi, err := os.Stat(p); err == nil {
		return fi.ModTime()
	}
	return time.Time{}
}
