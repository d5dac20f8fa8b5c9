package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/dsh-dev/dsh/core/event"
)

// Previewer is a tool that can show, before it runs, the change a call
// would make to a file, so a person asked for permission sees the change
// they approve (ACP's diff content). The preview reads the file as it is
// now, through the session's FileSystem; it changes nothing. A call whose
// change cannot be worked out (a file too large, an edit that does not
// match) has no preview: the call itself will say why it fails.
type Previewer interface {
	Preview(ctx context.Context, args json.RawMessage, env *Env) (*event.Diff, error)
}

// readForPreview reads the current text of p: nil when it does not exist.
func readForPreview(ctx context.Context, env *Env, p string) (*string, error) {
	if fi, err := os.Stat(p); err == nil && (fi.IsDir() || fi.Size() > changeMaxFileSize) {
		return nil, fmt.Errorf("%s is a directory or too large to preview", p)
	}
	data, err := filesOf(env).ReadFile(ctx, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := string(data)
	return &s, nil
}

// previewDiff is the bounded diff of a change (elided past diffInlineMax,
// with the hashes standing in).
func previewDiff(p string, old *string, updated string) *event.Diff {
	return diffOf(p, old, updated, "")
}

// Preview implements Previewer: the file's text now, and the content.
func (t writeTool) Preview(ctx context.Context, args json.RawMessage, env *Env) (*event.Diff, error) {
	a, p, err := t.parse(args, env)
	if err != nil {
		return nil, err
	}
	old, err := readForPreview(ctx, env, p)
	if err != nil {
		return nil, err
	}
	return previewDiff(p, old, *a.Content), nil
}

// Preview implements Previewer: the file's text now, and with the edit.
func (t editTool) Preview(ctx context.Context, args json.RawMessage, env *Env) (*event.Diff, error) {
	a, p, err := t.parse(args, env)
	if err != nil {
		return nil, err
	}
	return previewEdits(ctx, env, p, []editSpec{{Old: *a.OldString, New: *a.NewString, ReplaceAll: a.ReplaceAll}})
}

// Preview implements Previewer: the file's text now, and with every edit.
func (t multiEditTool) Preview(ctx context.Context, args json.RawMessage, env *Env) (*event.Diff, error) {
	specs, p, err := t.parse(args, env)
	if err != nil {
		return nil, err
	}
	return previewEdits(ctx, env, p, specs)
}

func previewEdits(ctx context.Context, env *Env, p string, specs []editSpec) (*event.Diff, error) {
	old, err := readForPreview(ctx, env, p)
	if err != nil {
		return nil, err
	}
	if old == nil {
		return nil, fmt.Errorf("%s does not exist", p)
	}
	updated := *old
	for _, e := range specs {
		if updated, _, _, err = applyEdit(updated, e, p); err != nil {
			return nil, err
		}
	}
	return previewDiff(p, old, updated), nil
}
