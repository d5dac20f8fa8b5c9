package core

import (
	"fmt"

	"github.com/dsh-dev/dsh/core/model"
)

// Tool calls written as text (model.ParseTextCalls): DeepSeek models
// sometimes write a call into their reply in their chat template's markup.
// The loop runs what parses as the calls it is (the tool/call event says
// fromText), keeps the text around it as the reply's text, and answers
// markup that does not parse with a short correction and one retry of the
// step, so the markup is never taken for the turn's answer. Markup inside
// a fenced code block or an inline code span is an example and stays text.

// markupCorrection is told to the model after a reply whose call markup
// did not parse; the step is then retried once.
const markupCorrection = "Your last reply wrote a tool call as text in your chat-template markup, and it could not " +
	"be parsed (%s), so nothing ran and the reply was not shown. Call tools through the tool-calling interface " +
	"only, never by writing the markup in your reply. If you meant to show the format, put it in a fenced code block."

// markupError is a reply whose call markup did not parse: a
// MALFORMED_RESPONSE the loop answers with a correction and one retry.
type markupError struct {
	err  *model.Error
	why  string
	resp *model.Response
}

func (e *markupError) Error() string { return e.err.Error() }
func (e *markupError) Unwrap() error { return e.err }

// recoverTextCalls moves the calls written as markup in resp's text into
// resp.ToolCalls (marked FromText). When markup starts like a call but does
// not parse, it returns a *markupError naming why, and resp is unchanged.
func recoverTextCalls(resp *model.Response) error {
	if resp.Text == "" {
		return nil
	}
	tc := model.ParseTextCalls(resp.Text)
	if tc.Broken != "" {
		return &markupError{why: tc.Broken, resp: resp, err: &model.Error{Class: model.ClassMalformed, Usage: resp.Usage,
			RequestID: resp.RequestID, Message: "the reply wrote a tool call as text that could not be parsed: " + tc.Broken}}
	}
	if len(tc.Calls) == 0 {
		return nil
	}
	resp.Text = tc.Text
	for _, c := range tc.Calls {
		c.FromText = true
		resp.ToolCalls = append(resp.ToolCalls, c)
	}
	if resp.FinishReason == "stop" {
		resp.FinishReason = "tool_calls"
	}
	return nil
}

// retryRequest is the request that retries the step: the request, then
// the reply as the model wrote it, then the correction.
func (e *markupError) retryRequest(req *model.Request) *model.Request {
	again := *req
	again.Messages = append(append([]model.Message(nil), req.Messages...),
		model.Message{Role: "assistant", Content: e.resp.Text, Reasoning: e.resp.Reasoning, Kind: model.KindRetry},
		model.Message{Role: "user", Content: fmt.Sprintf(markupCorrection, e.why), Kind: model.KindRetry})
	return &again
}
