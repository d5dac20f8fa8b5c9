package sdkrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// commands serves session/commands (ours): the slash commands the session
// offers, as ACP lists them in available_commands_update. Like
// session/prompt, it creates the session under that id when none is live
// or stored, so a host can show the menu before the first prompt.
func (s *Server) commands(ctx context.Context, raw json.RawMessage) (any, error) {
	id, err := protocol.ParseSessionIDParams(protocol.MethodSessionCommands, raw)
	if err != nil {
		return nil, err
	}
	sess, err := s.hostSession(ctx, id)
	if err != nil {
		return nil, err
	}
	cmds := sess.Commands()
	out := protocol.SessionCommandsResult{Commands: make([]protocol.CommandInfo, 0, len(cmds))}
	for _, c := range cmds {
		out.Commands = append(out.Commands, protocol.CommandInfo{Name: c.Name, Description: c.Description, Hint: c.Hint})
	}
	return out, nil
}

// hostSession is the session id names, live, resumed or created with the
// settings of initialize (and the host as the permission asker when it
// said it answers).
func (s *Server) hostSession(ctx context.Context, id string) (*core.Session, error) {
	s.mu.Lock()
	initialized, opts, hostAsks := s.initialized, s.sessCfg, s.hostAsks
	s.mu.Unlock()
	if !initialized {
		return nil, protocol.ErrNotInitialized
	}
	if hostAsks {
		opts.Asker = &hostAsker{s: s}
	}
	sess, err := s.rt.GetOrCreate(ctx, id, opts)
	if errors.Is(err, core.ErrClosed) {
		return nil, protocol.ErrShuttingDown
	}
	return sess, err
}

// promptContent turns a prompt's blocks into the user message's content.
// A prompt whose first block is "/name args" naming one of the session's
// slash commands runs it, as the ACP door and `dsh run` do: a command that
// expands to a prompt (/init, a command file) is sent in its place; one
// dsh answers itself (/mcp, /compact...) queues nothing and its outcome is
// returned instead. Text that is no command goes to the model unchanged.
// opts are what a command file asks of the turn its prompt starts.
func (s *Server) promptContent(ctx context.Context, sess *core.Session, blocks []protocol.PromptBlock) (content []event.ContentBlock, opts core.PromptOptions, _ *protocol.CommandOutcome, _ error) {
	content = make([]event.ContentBlock, 0, len(blocks))
	for i, b := range blocks {
		if i == 0 && b.Image == nil && b.Block.Type == event.BlockText {
			if name, args, ok := core.ParseCommand(b.Block.Text); ok {
				res, err := sess.RunCommand(ctx, name, args)
				switch {
				case errors.Is(err, core.ErrUnknownCommand):
				case err != nil:
					return nil, opts, nil, fmt.Errorf("/%s: %w", name, err)
				case res.Prompt != "":
					b.Block.Text, opts.Command = res.Prompt, res.Turn
				default:
					return nil, opts, &protocol.CommandOutcome{Name: name, Reply: res.Reply, Seq: res.Seq}, nil
				}
			}
		}
		if b.Image == nil {
			content = append(content, b.Block)
			continue
		}
		att, err := sess.SaveAttachment(b.Image.MimeType, b.Image.Data)
		if err != nil {
			return nil, opts, nil, err
		}
		content = append(content, event.ContentBlock{Type: event.BlockImage, Attachment: att})
	}
	return content, opts, nil, nil
}
