package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Backoff bounds.
const (
	backoffBase     = 500 * time.Millisecond
	backoffMax      = 30 * time.Second
	retryAfterLimit = 60 * time.Second
)

// Backoff is how long the loop waits before retry number attempt (1 for the
// first retry). It doubles from 0.5 s (0.5, 1, 2, 4 …) up to 30 s with ±10% jitter, so
// parallel sessions do not retry in lockstep. A server-given retryAfter wins,
// capped at 60 s so a bogus header cannot park a session for hours.
func Backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, retryAfterLimit)
	}
	if attempt < 1 {
		attempt = 1
	}
	d := backoffMax
	if attempt <= 16 {
		d = min(time.Duration(float64(backoffBase)*math.Pow(2, float64(attempt-1))), backoffMax)
	}
	jitter := 1 + (rand.Float64()*0.2 - 0.1)
	return time.Duration(float64(d) * jitter)
}

// maxErrorBody bounds how much of an error response we read.
const maxErrorBody = 64 << 10

// maxExcerpt bounds the error-body excerpt quoted in Error.Message.
const maxExcerpt = 300

// httpError turns a non-200 response into a typed *Error. body is at most
// maxErrorBody bytes of the response; key is redacted from it.
func httpError(provider string, resp *http.Response, body []byte, key string) *Error {
	msg := redactedBodyMessage(body, key)
	e := &Error{
		Status:    resp.StatusCode,
		RequestID: requestID(resp.Header),
	}
	what := ""
	switch s := resp.StatusCode; {
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		e.Class = ClassAuth
		what = "the API key was rejected; check " + keyEnv(provider)
	case s == http.StatusPaymentRequired:
		e.Class = ClassQuota
		what = "insufficient balance; top up the account"
	case s == http.StatusTooManyRequests:
		e.Class = ClassRateLimit
		e.RetryAfter = retryAfter(resp.Header, time.Now())
		what = "rate limited"
	case s == http.StatusNotFound:
		e.Class = ClassInvalid
		what = "not found; check the base URL and the model id"
	case s == http.StatusBadRequest || s == http.StatusUnprocessableEntity ||
		s == http.StatusRequestEntityTooLarge:
		e.Class = ClassInvalid
		if isContextLengthMessage(msg) {
			e.Class = ClassContextWindow
		}
		what = "the request was rejected"
	case s == http.StatusRequestTimeout || s == http.StatusConflict || s >= 500:
		e.Class = ClassServer
		e.RetryAfter = retryAfter(resp.Header, time.Now())
		what = "server error"
	default:
		e.Class = ClassInvalid
		what = "unexpected response"
	}
	e.Message = fmt.Sprintf("%s: HTTP %d: %s", provider, resp.StatusCode, what)
	if msg != "" {
		e.Message += ": " + msg
	}
	return e
}

// errorBodyMessage extracts error.message from an OpenAI/DeepSeek style
// error body, else returns a short excerpt of the body itself.
func errorBodyMessage(body []byte) string {
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &env) == nil {
		var inner wireAPIError
		if len(env.Error) > 0 && json.Unmarshal(env.Error, &inner) == nil && inner.Message != "" {
			return excerpt(inner.Message)
		}
		var s string
		if len(env.Error) > 0 && json.Unmarshal(env.Error, &s) == nil && s != "" {
			return excerpt(s)
		}
		if env.Message != "" {
			return excerpt(env.Message)
		}
	}
	return excerpt(strings.TrimSpace(string(body)))
}

// redactedBodyMessage is errorBodyMessage without the API key. The raw body
// is redacted before it is parsed and cut, so a key straddling the excerpt's
// cut cannot leave a prefix behind; the message is redacted again in case
// the key was spelled with JSON escapes.
func redactedBodyMessage(body []byte, key string) string {
	return redact(errorBodyMessage([]byte(redact(string(body), key))), key)
}

// excerpt shortens s to maxExcerpt bytes on a rune boundary and folds
// whitespace so one error stays one log line.
func excerpt(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= maxExcerpt {
		return s
	}
	cut := maxExcerpt
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// redact removes the API key from text that came from the server (some
// servers echo the key they rejected).
func redact(s, key string) string {
	if key == "" || len(key) < 4 {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}

func isContextLengthMessage(msg string) bool {
	m := strings.ToLower(msg)
	for _, k := range []string{"context length", "context_length", "maximum context", "context window", "too many tokens", "prompt is too long"} {
		if strings.Contains(m, k) {
			return true
		}
	}
	return false
}

// retryAfter reads retry-after-ms (milliseconds) or Retry-After (seconds or
// an HTTP date). It returns 0 when absent or unparsable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && !math.IsInf(ms, 0) {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || math.IsInf(secs, 0) || math.IsNaN(secs) {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

func requestID(h http.Header) string {
	for _, k := range []string{"x-request-id", "x-ds-trace-id", "request-id"} {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// errFirstData and errStall are the causes our watchdogs cancel the request
// with, so a read error can be told apart from a user cancel.
var (
	errFirstData = errors.New("first-data deadline")
	errStall     = errors.New("stream stall")
)

// transportError classifies a failure to send or read: the caller's cancel
// (ABORTED), one of our watchdogs (TIMEOUT), or the network (TRANSPORT).
// The URL in *url.Error never contains the key (it travels in a header).
func (p *httpProvider) transportError(ctx, reqCtx context.Context, err error, gotData bool) *Error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return aborted(ctxErr)
	}
	switch context.Cause(reqCtx) {
	case errFirstData:
		return &Error{Class: ClassTimeout, Err: err,
			Message: fmt.Sprintf("%s: no data from the model within %s (first-data deadline)", p.name, p.firstData)}
	case errStall:
		return &Error{Class: ClassTimeout, Err: err,
			Message: fmt.Sprintf("%s: the stream stalled: no data for %s", p.name, p.stall)}
	}
	if errors.Is(err, errLineTooLong) {
		return &Error{Class: ClassMalformed, Err: err, Message: fmt.Sprintf("%s: %v", p.name, err)}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &Error{Class: ClassTimeout, Err: err, Message: fmt.Sprintf("%s: %v", p.name, err)}
	}
	what := "request failed"
	if gotData {
		what = "stream broken"
	}
	return &Error{Class: ClassTransport, Err: err, Message: fmt.Sprintf("%s: %s: %v", p.name, what, err)}
}

// aborted is the error every provider returns when the caller cancels.
func aborted(ctxErr error) *Error {
	return &Error{Class: ClassAborted, Err: ctxErr, Message: "model call cancelled: " + ctxErr.Error()}
}

func keyEnv(provider string) string {
	if provider == ProviderOpenAI {
		return "OPENAI_API_KEY"
	}
	return "DEEPSEEK_API_KEY"
}
