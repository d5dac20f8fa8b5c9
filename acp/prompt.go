package acp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
)

// imageTypes are the image media types a prompt may carry.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/webp": true, "image/gif": true}

// commands is the session's slash-command list, noted as announced.
func (st *sessState) commands() sdk.SessionUpdate {
	u := availableCommands(st.s)
	key, _ := json.Marshal(u)
	st.pmu.Lock()
	st.cmds = string(key)
	st.pmu.Unlock()
	return u
}

// commandsChanged returns the slash-command list when it differs from
// the one last announced (a command file was added, changed or removed
// since): a prompt then announces it before its turn.
func (st *sessState) commandsChanged() (sdk.SessionUpdate, bool) {
	u := availableCommands(st.s)
	key, _ := json.Marshal(u)
	st.pmu.Lock()
	defer st.pmu.Unlock()
	if st.cmds == string(key) {
		return u, false
	}
	st.cmds = string(key)
	return u, true
}

// availableCommands is the session's slash-command list (core's registry:
// only commands that work).
func availableCommands(s *core.Session) sdk.SessionUpdate {
	cmds := s.Commands()
	out := make([]sdk.AvailableCommand, 0, len(cmds))
	for _, c := range cmds {
		ac := sdk.AvailableCommand{Name: c.Name, Description: c.Description}
		if c.Hint != "" {
			ac.Input = &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: c.Hint}}
		}
		out = append(out, ac)
	}
	return sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: out}}
}

// Prompt runs one turn. It answers after the turn has ended and every
// update of it is on the wire. Cancellation (session/cancel, or the
// request's own cancellation) answers stopReason cancelled, never -32800.
func (a *agent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	if !a.enter() {
		return sdk.PromptResponse{}, rpcError(codeInternalError, "%v", errShuttingDown)
	}
	defer a.leave()
	st := a.session(string(p.SessionId))
	if st == nil {
		return sdk.PromptResponse{}, unknownSession(p.SessionId)
	}
	// The frame filter already refuses a second prompt; this also covers
	// a prompt sent as a notification.
	st.pmu.Lock()
	if st.prompting {
		st.pmu.Unlock()
		return sdk.PromptResponse{}, rpcError(codeInvalidParams, msgPromptInFlight)
	}
	st.prompting, st.cancelRequested = true, false
	st.pmu.Unlock()
	defer func() {
		st.pmu.Lock()
		st.prompting, st.cancelRequested = false, false
		st.pmu.Unlock()
	}()

	if u, changed := st.commandsChanged(); changed {
		if err := st.rd.pushWait(ctx, item{update: &u}); err != nil {
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		}
	}
	prompt, popts, resp, done, err := a.command(ctx, st, p.Prompt)
	if done || err != nil {
		return resp, err
	}
	content, err := a.promptContent(ctx, st, prompt)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	ticket, err := st.s.PromptWith(context.WithoutCancel(ctx), content, popts)
	if errors.Is(err, core.ErrHookBlocked) {
		// A UserPromptSubmit hook refused it: the user reads why.
		return a.refused(ctx, st, "The prompt was not sent: "+strings.TrimPrefix(err.Error(), core.ErrHookBlocked.Error()+": "))
	}
	if err != nil {
		return sdk.PromptResponse{}, coreError(err)
	}
	select {
	case <-ticket.Done():
	case <-ctx.Done():
		st.pmu.Lock()
		st.cancelRequested = true
		st.pmu.Unlock()
		st.s.CancelAll(nil) // our prompt may still be queued: drop it too
		<-ticket.Done()
	}
	res := ticket.Result()
	if res.Seq >= 0 {
		// Every update of the turn goes out before the response.
		_ = st.waitFor(context.Background(), func() bool { return st.sent >= res.Seq })
	}
	st.pmu.Lock()
	cancelled := st.cancelRequested
	st.pmu.Unlock()
	if cancelled {
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	}
	switch res.Reason.Kind {
	case event.ReasonCompleted:
		return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
	case event.ReasonMaxTokens:
		return sdk.PromptResponse{StopReason: sdk.StopReasonMaxTokens}, nil
	case event.ReasonBlocked:
		// The step cap or a detected loop of identical calls.
		return sdk.PromptResponse{StopReason: sdk.StopReasonMaxTurnRequests}, nil
	case event.ReasonRefusal:
		return sdk.PromptResponse{StopReason: sdk.StopReasonRefusal}, nil
	case event.ReasonAborted, event.ReasonInterrupted:
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	case event.ReasonError:
		msg := "unknown error"
		if res.Reason.Error != nil {
			msg = res.Reason.Error.Message
		}
		return sdk.PromptResponse{}, rpcError(codeInternalError, "turn failed: %s", msg)
	}
	a.log.Warn("acp: turn ended for an unknown reason", "session", st.id, "reason", res.Reason.Kind)
	return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
}

// refused tells the user why dsh did not take the prompt and ends it with
// stopReason refusal.
func (a *agent) refused(ctx context.Context, st *sessState, why string) (sdk.PromptResponse, error) {
	msg := sdk.UpdateAgentMessageText(why)
	if err := st.rd.pushWait(ctx, item{update: &msg}); err != nil {
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	}
	return sdk.PromptResponse{StopReason: sdk.StopReasonRefusal}, nil
}

// promptContent turns ACP content into a user message. The whole prompt
// is validated before anything is written; images are then saved to the
// session's attachment store in order.
func (a *agent) promptContent(ctx context.Context, st *sessState, blocks []sdk.ContentBlock) ([]event.ContentBlock, error) {
	type image struct {
		at   int // index in out
		mime string
		data []byte
	}
	var (
		out    []event.ContentBlock
		images []image
		filled bool
	)
	addText := func(t string) {
		if strings.TrimSpace(t) != "" {
			filled = true
		}
		if n := len(out); n > 0 && out[n-1].Type == event.BlockText {
			out[n-1].Text += t
			return
		}
		out = append(out, event.Text(t))
	}
	addImage := func(n int, mime, b64 string) error {
		data, err := decodeImage(n, mime, b64)
		if err != nil {
			return err
		}
		images = append(images, image{at: len(out), mime: mime, data: data})
		out = append(out, event.ContentBlock{Type: event.BlockImage})
		filled = true
		return nil
	}
	for i, b := range blocks {
		n := i + 1
		switch {
		case b.Text != nil:
			addText(b.Text.Text)
		case b.ResourceLink != nil:
			if text, ok := a.mcpResource(ctx, st, b.ResourceLink.Uri); ok {
				addText(text)
				continue
			}
			addText("\n[resource_link name=" + jsonString(b.ResourceLink.Name) + " uri=" + jsonString(b.ResourceLink.Uri) + "]\n")
		case b.Resource != nil:
			r := b.Resource.Resource
			switch {
			case r.TextResourceContents != nil:
				t := r.TextResourceContents
				addText("\n[resource uri=" + jsonString(t.Uri) + "]\n" + t.Text + "\n[/resource]\n")
			case r.BlobResourceContents != nil:
				bl := r.BlobResourceContents
				mime := ""
				if bl.MimeType != nil {
					mime = *bl.MimeType
				}
				if !imageTypes[mime] {
					return nil, rpcError(codeInvalidParams, "block %d: binary resource %s (%s) is not supported; only text resources and png, jpeg, webp or gif images are", n, bl.Uri, orUnknown(mime))
				}
				if err := addImage(n, mime, bl.Blob); err != nil {
					return nil, err
				}
			default:
				return nil, rpcError(codeInvalidParams, "block %d: a resource block needs text or blob contents", n)
			}
		case b.Image != nil:
			if err := addImage(n, b.Image.MimeType, b.Image.Data); err != nil {
				return nil, err
			}
		case b.Audio != nil:
			return nil, rpcError(codeInvalidParams, "block %d: audio content is not supported", n)
		default:
			return nil, rpcError(codeInvalidParams, "block %d: unknown content block", n)
		}
	}
	if !filled {
		return nil, rpcError(codeInvalidParams, msgEmptyPrompt)
	}
	if len(images) > 0 {
		cfg := st.s.Config()
		prov, err := a.rt.Provider(cfg.Provider)
		if err != nil {
			return nil, rpcError(codeInternalError, "%v", err)
		}
		if !prov.Caps(cfg.Model).Images {
			return nil, rpcError(codeInvalidParams, "model %s does not accept images", cfg.Model)
		}
		for _, im := range images {
			att, err := st.s.SaveAttachment(im.mime, im.data)
			if errors.Is(err, core.ErrImageRefused) {
				return nil, rpcError(codeInvalidParams, "%v", err)
			}
			if err != nil {
				return nil, rpcError(codeInternalError, "saving an image: %v", err)
			}
			out[im.at].Attachment = att
		}
	}
	return out, nil
}

// mcpResource resolves a resource link that names a resource of one of
// the session's MCP servers (not a file: the model reads files itself):
// the resource's text, as an embedded resource would carry it.
func (a *agent) mcpResource(ctx context.Context, st *sessState, uri string) (string, bool) {
	if uri == "" || strings.HasPrefix(uri, "file:") {
		return "", false
	}
	rctx, cancel := context.WithTimeout(ctx, resourceLinkWait)
	defer cancel()
	server, text, err := st.s.ReadResource(rctx, uri)
	if err != nil {
		a.log.Debug("acp: resource link not resolved through MCP", "uri", uri, "err", err)
		return "", false
	}
	return "\n[resource uri=" + jsonString(uri) + " server=" + jsonString(server) + "]\n" + text + "\n[/resource]\n", true
}

// resourceLinkWait bounds reading one linked MCP resource.
const resourceLinkWait = 10 * time.Second

// decodeImage checks an image block: a supported type, canonical base64,
// and bytes that really are an image of that type.
func decodeImage(n int, mime, b64 string) ([]byte, error) {
	if !imageTypes[mime] {
		return nil, rpcError(codeInvalidParams, "block %d: image type %s is not supported; use png, jpeg, webp or gif", n, orUnknown(mime))
	}
	data, err := base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil {
		return nil, rpcError(codeInvalidParams, "block %d: image data is not valid base64: %v", n, err)
	}
	if len(data) == 0 {
		return nil, rpcError(codeInvalidParams, "block %d: image data is empty", n)
	}
	if got := http.DetectContentType(data); got != mime {
		return nil, rpcError(codeInvalidParams, "block %d: image data is %s, not %s", n, got, mime)
	}
	return data, nil
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func orUnknown(s string) string {
	if s == "" {
		return "no media type"
	}
	return s
}
