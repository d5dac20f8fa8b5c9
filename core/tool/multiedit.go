package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
)

// multiEditMax bounds the edits of one multi_edit call.
const multiEditMax = 100

const multiEditSchema = `{"type":"object","properties":{"file_path":{"type":"string","description":"Path of the file to change, absolute or relative to the working directory."},"edits":{"type":"array","minItems":1,"maxItems":100,"description":"The replacements, applied in order, each to the result of the ones before it.","items":{"type":"object","properties":{"old_string":{"type":"string","description":"The text to replace, as in edit."},"new_string":{"type":"string","description":"The text to put in its place."},"replace_all":{"type":"boolean","description":"Replace every occurrence. Default false."}},"required":["old_string","new_string"],"additionalProperties":false}}},"required":["file_path","edits"],"additionalProperties":false}`

const multiEditDescription = `Make several replacements in one file at once: each edit works like edit (the same forgiving matching and uniqueness rule) and applies to the result of the edits before it. All or nothing: if any edit fails, the file is left unchanged and the error says which edit failed and why. Returns one unified diff of the whole change. The file must have been read in this session and not changed since.`

type multiEditTool struct{}

type multiEditArgs struct {
	FilePath string `json:"file_path"`
	Edits    []struct {
		OldString  *string `json:"old_string"`
		NewString  *string `json:"new_string"`
		ReplaceAll bool    `json:"replace_all"`
	} `json:"edits"`
}

func (multiEditTool) Name() string            { return "multi_edit" }
func (multiEditTool) Description() string     { return multiEditDescription }
func (multiEditTool) Schema() json.RawMessage { return json.RawMessage(multiEditSchema) }
func (multiEditTool) Kind() Kind              { return KindMutate }
func (multiEditTool) ParallelSafe() bool      { return false }

func (multiEditTool) parse(args json.RawMessage, env *Env) ([]editSpec, string, error) {
	var a multiEditArgs
	if err := decodeArgs("multi_edit", args, &a); err != nil {
		return nil, "", err
	}
	if err := required("multi_edit", "file_path", a.FilePath); err != nil {
		return nil, "", err
	}
	switch {
	case len(a.Edits) == 0:
		return nil, "", fmt.Errorf("invalid arguments for multi_edit: edits is required and must hold at least one edit")
	case len(a.Edits) > multiEditMax:
		return nil, "", fmt.Errorf("invalid arguments for multi_edit: %d edits, at most %d per call", len(a.Edits), multiEditMax)
	}
	specs := make([]editSpec, len(a.Edits))
	for i, e := range a.Edits {
		n := i + 1
		switch {
		case e.OldString == nil:
			return nil, "", fmt.Errorf("invalid arguments for multi_edit: edit %d: old_string is required", n)
		case e.NewString == nil:
			return nil, "", fmt.Errorf("invalid arguments for multi_edit: edit %d: new_string is required (use an empty string to delete old_string)", n)
		case *e.OldString == "":
			return nil, "", fmt.Errorf("invalid arguments for multi_edit: edit %d: old_string is empty", n)
		case *e.OldString == *e.NewString:
			return nil, "", fmt.Errorf("invalid arguments for multi_edit: edit %d: old_string and new_string are identical", n)
		}
		specs[i] = editSpec{Old: *e.OldString, New: *e.NewString, ReplaceAll: e.ReplaceAll}
	}
	p, err := resolveIn(env, a.FilePath)
	if err != nil {
		return nil, "", fmt.Errorf("multi_edit: %w", err)
	}
	return specs, p, nil
}

func (t multiEditTool) Inspect(args json.RawMessage, env *Env) (Access, error) {
	specs, p, err := t.parse(args, env)
	if err != nil {
		return Access{}, err
	}
	ws, _ := workspaceOf(env)
	return Access{Paths: []string{p}, Write: true, Title: fmt.Sprintf("Edit %s (%d changes)", display(ws, p), len(specs))}, nil
}

func (t multiEditTool) Run(ctx context.Context, args json.RawMessage, env *Env) Result {
	specs, p, err := t.parse(args, env)
	if err != nil {
		return ErrorResult(err.Error())
	}
	ws, _ := workspaceOf(env)
	shown := display(ws, p)
	meta := &event.ToolMeta{Kind: "edit", Paths: []string{p}}
	old, msg := loadForChange(ctx, env, p, shown, "multi_edit")
	if msg != "" {
		return withMeta(ErrorResult(msg), meta)
	}
	// Every edit is applied in memory first; the file is written once,
	// only when all of them succeeded.
	updated := old
	var done []string
	for i, e := range specs {
		next, n, how, err := applyEdit(updated, e, shown)
		if err != nil {
			return withMeta(ErrorResult(fmt.Sprintf("edit %d of %d failed, so nothing was written (edits apply in order, each to the result of the ones before): %v", i+1, len(specs), err)), meta)
		}
		line := fmt.Sprintf("%d: replaced %d", i+1, n)
		if how != matchExact {
			line += " (" + how + ")"
		}
		done = append(done, line)
		updated = next
	}
	return writeChange(ctx, env, p, shown, old, updated, meta, func(unified string) string {
		return fmt.Sprintf("Edited %s with %d edits (%s).\n\n%s", shown, len(specs), strings.Join(done, "; "), unified)
	})
}
