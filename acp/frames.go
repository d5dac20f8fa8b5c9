package acp

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core/event"
)

// Every frame the door writes stays far below the 10 MiB line cap of
// acp-go-sdk clients (a longer line closes their connection): a model that
// writes a 12 MiB file must not make a 12 MiB tool_call. What can be big is
// bounded where it is projected — a call's arguments here, a result's text
// and diff in result (updates.go), an image replayed in userChunks — and
// what is left out is said, with the file it can be read from.
const (
	// maxRawInput bounds the JSON of a call's arguments in a tool_call or
	// a permission request.
	maxRawInput = 256 << 10
	// maxRawString bounds one string inside arguments that exceed
	// maxRawInput (a write's content, an edit's old and new text).
	maxRawString = 8 << 10
)

// rawInput is the call's arguments as JSON (or as the string the model
// sent when it is not JSON), bounded: past maxRawInput, long strings are
// replaced by a note of their size and the file they are about, and if
// that is still too long, the whole input is.
func rawInput(args string, paths []string) any {
	if len(args) <= maxRawInput {
		if json.Valid([]byte(args)) {
			return json.RawMessage(args)
		}
		return args
	}
	where := ""
	if len(paths) > 0 {
		where = "; the file is " + paths[0]
	}
	var v any
	if err := json.Unmarshal([]byte(args), &v); err == nil {
		v = shorten(v, where)
		if b, err := json.Marshal(v); err == nil && len(b) <= maxRawInput {
			return json.RawMessage(b)
		}
	}
	return map[string]any{"summary": fmt.Sprintf("[arguments of %d bytes not shown%s]", len(args), where)}
}

// shorten replaces the long strings in a decoded JSON value.
func shorten(v any, where string) any {
	switch x := v.(type) {
	case string:
		if len(x) > maxRawString {
			return fmt.Sprintf("[%d bytes not shown%s]", len(x), where)
		}
	case []any:
		for i := range x {
			x[i] = shorten(x[i], where)
		}
	case map[string]any:
		for k := range x {
			x[k] = shorten(x[k], where)
		}
	}
	return v
}

// diffContent shows a change the way an editor reviews it: ACP diff
// content with the whole old and new text, or, for a change too large for
// one frame (or one the tool elided), a note naming the file.
func diffContent(d *event.Diff) sdk.ToolCallContent {
	if !d.Elided && diffSize(d) <= maxDiffBytes {
		return sdk.ToolCallContent{Diff: &sdk.ToolCallContentDiff{Path: d.Path, OldText: d.OldText, NewText: d.NewText, Type: "diff"}}
	}
	return sdk.ToolContent(sdk.TextBlock(fmt.Sprintf("The change to %s is too large to show here; open the file to review it.", d.Path)))
}

// permissionContent is what a permission request shows of the change the
// call would make, when its tool can say (write, edit, multi_edit).
func permissionContent(ctx context.Context, preview func(context.Context) *event.Diff) []sdk.ToolCallContent {
	if preview == nil {
		return nil
	}
	d := preview(ctx)
	if d == nil {
		return nil
	}
	return []sdk.ToolCallContent{diffContent(d)}
}
