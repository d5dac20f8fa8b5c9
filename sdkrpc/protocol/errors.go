package protocol

import (
	"errors"
	"strings"
)

// The original's handler failure messages (spec dsh-protocols.md §1.5). The
// server answers each as -32603 with exactly this message; the original's
// tests assert the text, so it must not change.
var (
	ErrInvalidMaxTokens       = errors.New("initialize maxTokens must be a positive safe integer")
	ErrInvalidReasoningEffort = errors.New("initialize reasoningEffort must be a non-empty string")
	ErrShuttingDown           = errors.New("SDK server is shutting down")
	ErrNotInitialized         = errors.New("SDK server is not initialized")
)

// NoAdapterError is `no adapter registered for provider "<p>"`. The provider
// is quoted as a JavaScript template would, without escaping.
func NoAdapterError(provider string) error {
	return errors.New(`no adapter registered for provider "` + provider + `"`)
}

// DisposedOutsideError is `session agent was disposed outside the server: <id>`.
func DisposedOutsideError(sessionID string) error {
	return errors.New("session agent was disposed outside the server: " + sessionID)
}

// UnknownMethodError is `unknown DeepSeek Harness SDK runtime method: <m>`,
// the SDK server's answer (-32603, not -32601) to a method it does not serve.
func UnknownMethodError(method string) error {
	return errors.New("unknown DeepSeek Harness SDK runtime method: " + method)
}

// UnsupportedEffortError reports a reasoning effort the route does not
// support. The original's message ends `does not support reasoning effort
// "<e>"`; its beginning (the route's name) is ours.
func UnsupportedEffortError(provider, model, effort string) error {
	return errors.New(`model ` + provider + `/` + model + ` does not support reasoning effort "` + effort + `"`)
}

// ModelUnavailableError is the adapter resolve error `model unavailable: p/m`.
func ModelUnavailableError(provider, model string) error {
	return errors.New("model unavailable: " + provider + "/" + model)
}

// ImageUnsupportedError is the rejection of an image prompt for a model
// whose declared input kinds lack images.
func ImageUnsupportedError(model string) error {
	return errors.New(`Model "` + model + `" does not support image input; initialize the SDK with a model that accepts images.`)
}

// TeardownError is the aggregate failure of shutdown when more than one
// disposal failed; its message is the original's `SDK server teardown failed`.
type TeardownError struct {
	Errs []error
}

func (e *TeardownError) Error() string {
	return "SDK server teardown failed"
}

// Unwrap returns the individual failures (errors.Is/As see each).
func (e *TeardownError) Unwrap() []error { return e.Errs }

// Detail lists the individual failures, for logs.
func (e *TeardownError) Detail() string {
	parts := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "; ")
}

// Teardown folds shutdown failures as the original: none → nil, one → that
// error itself, more → *TeardownError.
func Teardown(errs []error) error {
	var kept []error
	for _, err := range errs {
		if err != nil {
			kept = append(kept, err)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	return &TeardownError{Errs: kept}
}
