package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
)

const editSchema = `{"type":"object","properties":{"file_path":{"type":"string","description":"Path of the file to change, absolute or relative to the working directory."},"old_string":{"type":"string","description":"The exact text to replace, including whitespace and indentation, as it appears in the file (without read's line-number prefixes). It must occur exactly once unless replace_all is true; include enough surrounding lines to make it unique."},"new_string":{"type":"string","description":"The text to put in its place. Must differ from old_string."},"replace_all":{"type":"boolean","description":"Replace every occurrence of old_string instead of exactly one. Default false."}},"required":["file_path","old_string","new_string"],"additionalProperties":false}`

const editDescription = `Replace exact text in a file. old_string must match the file exactly once (or set replace_all). You must have read the file in this session, and it must not have changed since; if it has, read it again. Returns a unified diff of the change.`

type editTool struct{}

type editArgs struct {
	FilePath   string  `json:"file_path"`
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
}

func (editTool) Name() string            { return "edit" }
func (editTool) Description() string     { return editDescription }
func (editTool) Schema() json.RawMessage { return json.RawMessage(editSchema) }
func (editTool) Kind() Kind              { return KindMutate }
func (editTool) ParallelSafe() bool      { return false }

func (editTool) parse(args json.RawMessage, env *Env) (editArgs, string, error) {
	var a editArgs
	if err := decodeArgs("edit", args, &a); err != nil {
		return a, "", err
	}
	if err := required("edit", "file_path", a.FilePath); err != nil {
		return a, "", err
	}
	if a.OldString == nil {
		return a, "", errors.New("invalid arguments for edit: old_string is required")
	}
	if a.NewString == nil {
		return a, "", errors.New("invalid arguments for edit: new_string is required (use an empty string to delete old_string)")
	}
	if *a.OldString == "" {
		return a, "", errors.New("invalid arguments for edit: old_string is empty; to create a file or replace all of it use write")
	}
	if *a.OldString == *a.NewString {
		return a, "", errors.New("invalid arguments for edit: old_string and new_string are identical, so there is nothing to change")
	}
	p, err := resolveIn(env, a.FilePath)
	if err != nil {
		return a, "", fmt.Errorf("edit: %w", err)
	}
	return a, p, nil
}

func (t editTool) Inspect(args json.RawMessage, env *Env) (Access, error) {
	_, p, err := t.parse(args, env)
	if err != nil {
		return Access{}, err
	}
	ws, _ := workspaceOf(env)
	return Access{Paths: []string{p}, Write: true, Title: "Edit " + display(ws, p)}, nil
}

func (t editTool) Run(ctx context.Context, args json.RawMessage, env *Env) Result {
	a, p, err := t.parse(args, env)
	if err != nil {
		return ErrorResult(err.Error())
	}
	ws, _ := workspaceOf(env)
	shown := display(ws, p)
	meta := &event.ToolMeta{Kind: "edit", Paths: []string{p}}
	fail := func(msg string) Result { return withMeta(ErrorResult(msg), meta) }
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return fail(fmt.Sprintf("%s is a directory, not a file", shown))
	}
	files := filesOf(env)
	data, err := files.ReadFile(ctx, p)
	if err != nil {
		return fail(fileError("edit", shown, err))
	}
	if env.Reads == nil {
		return fail("internal error: this session does not track reads, so files cannot be edited safely")
	}
	if err := env.Reads.Check(p, data); err != nil {
		return fail("edit refused: " + err.Error())
	}
	old := string(data)
	oldStr, newStr := *a.OldString, *a.NewString
	n := strings.Count(old, oldStr)
	if n == 0 && strings.Contains(old, "\r\n") && !strings.Contains(oldStr, "\r\n") {
		// A CRLF file and a model that writes "\n": match line endings.
		crOld := strings.ReplaceAll(oldStr, "\n", "\r\n")
		if c := strings.Count(old, crOld); c > 0 {
			oldStr, newStr, n = crOld, strings.ReplaceAll(newStr, "\n", "\r\n"), c
		}
	}
	switch {
	case n == 0:
		return fail(fmt.Sprintf("old_string was not found in %s; it must match the file exactly, including whitespace and indentation (read the file again if unsure)", shown))
	case n > 1 && !a.ReplaceAll:
		return fail(fmt.Sprintf("old_string occurs %d times in %s; include more surrounding lines to make it unique, or set replace_all to replace every occurrence", n, shown))
	}
	var updated string
	if a.ReplaceAll {
		updated = strings.ReplaceAll(old, oldStr, newStr)
	} else {
		updated = strings.Replace(old, oldStr, newStr, 1)
	}
	if err := files.WriteFile(ctx, p, []byte(updated), 0o644); err != nil {
		return fail(fileError("edit", shown, err))
	}
	env.Reads.Record(p, []byte(updated), modTimeOf(p))
	unified := UnifiedDiff(shown, old, updated)
	meta.Diff = &event.Diff{Path: p, OldText: &old, NewText: updated, Unified: unified}
	word := "occurrence"
	if n > 1 {
		word = "occurrences"
	}
	return withMeta(TextResult(fmt.Sprintf("Edited %s: replaced %d %s.\n\n%s", shown, n, word, unified)), meta)
}
