package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dsh-dev/dsh/core/event"
)

const editSchema = `{"type":"object","properties":{"file_path":{"type":"string","description":"Path of the file to change, absolute or relative to the working directory."},"old_string":{"type":"string","description":"The exact text to replace, including whitespace and indentation, as it appears in the file (without read's line-number prefixes). It must occur exactly once unless replace_all is true; include enough surrounding lines to make it unique."},"new_string":{"type":"string","description":"The text to put in its place. Must differ from old_string."},"replace_all":{"type":"boolean","description":"Replace every occurrence of old_string instead of exactly one. Default false."}},"required":["file_path","old_string","new_string"],"additionalProperties":false}`

const editDescription = `Replace text in a file. old_string must match exactly one place (or set replace_all). If it does not match exactly, edit retries with line endings normalised, then ignoring trailing whitespace, then ignoring a uniform difference of indentation (new_string is re-indented to match); a match must still be unique. On a miss the error shows the closest block of the file. You must have read the file in this session, and it must not have changed since; if it has, read it again. Returns a unified diff of the change.`

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
	old, msg := loadForChange(ctx, env, p, shown, "edit")
	if msg != "" {
		return fail(msg)
	}
	updated, n, how, err := applyEdit(old, editSpec{Old: *a.OldString, New: *a.NewString, ReplaceAll: a.ReplaceAll}, shown)
	if err != nil {
		return fail(err.Error())
	}
	return writeChange(ctx, env, p, shown, old, updated, meta, func(unified string) string {
		word := "occurrence"
		if n > 1 {
			word = "occurrences"
		}
		note := ""
		if how != matchExact {
			note = " (matched with " + how + ")"
		}
		return fmt.Sprintf("Edited %s: replaced %d %s%s.\n\n%s", shown, n, word, note, unified)
	})
}

// writeChange writes an edited file, records it as seen and answers with
// the bounded diff; say words the result around the unified diff.
func writeChange(ctx context.Context, env *Env, p, shown, old, updated string, meta *event.ToolMeta, say func(unified string) string) Result {
	if updated == old {
		return withMeta(ErrorResult(fmt.Sprintf("the edit leaves %s unchanged (the replacement equals the text it replaces); nothing was written", shown)), meta)
	}
	if err := filesOf(env).WriteFile(ctx, p, []byte(updated), 0o644); err != nil {
		return withMeta(ErrorResult(fileError("edit", shown, err)), meta)
	}
	env.Reads.Record(p, []byte(updated), modTimeOf(p))
	unified := UnifiedDiff(shown, old, updated)
	meta.Diff = diffOf(p, &old, updated, unified)
	text, cut := FitText(env, say(unified))
	meta.Truncated = cut
	return withMeta(TextResult(text), meta)
}
