package model

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Provider names, as given to --provider / DSH_PROVIDER.
const (
	ProviderDeepSeek = "deepseek-official"
	ProviderOpenAI   = "openai-compatible"
	ProviderScripted = "scripted"
)

// DefaultDeepSeekBaseURL is where deepseek-official goes unless told.
const DefaultDeepSeekBaseURL = "https://api.deepseek.com"

// Defaults of the watchdogs (spec §1.8).
const (
	// DefaultFirstDataTimeout: DeepSeek queues a request for up to 10 min,
	// sending keep-alive comments, before it closes the connection.
	DefaultFirstDataTimeout = 11 * time.Minute
	// DefaultStallTimeout: silence allowed between data lines once the
	// model streams. Reported mid-reasoning stalls never end on their own.
	DefaultStallTimeout = 180 * time.Second
	// responseHeaderTimeout bounds the wait for response headers, which
	// DeepSeek sends before queueing (the queue wait is keep-alives).
	responseHeaderTimeout = 5 * time.Minute
)

// DeepSeekDefaultMaxTokens is the max_tokens we send to DeepSeek when the
// request does not say. DeepSeek's own default changed across model
// generations (spec §1.2: always set it). Thinking tokens count toward the
// cap, so a small one cuts a hard step off mid-thought or mid-tool-call;
// the V4 models allow 384K output tokens, and the original harness sends
// 256,000, which leaves room for long reasoning plus a large write. The
// cap bounds a runaway step, it is not a budget: --max-tokens and the
// config file's maxTokens override it.
const DeepSeekDefaultMaxTokens = 256_000

// New builds the named provider. It reads no environment: the caller (cmd)
// fills Options from flags and environment, so tests never depend on the
// process environment. Errors are meant for a human at a terminal.
func New(provider string, opts Options) (Provider, error) {
	switch provider {
	case ProviderDeepSeek:
		return newHTTP(provider, dialectDeepSeek, opts)
	case ProviderOpenAI:
		return newHTTP(provider, dialectOpenAI, opts)
	case ProviderScripted:
		if opts.ScriptPath == "" {
			return nil, errors.New("the scripted provider needs a script file: pass --script FILE or set DSH_SCRIPT")
		}
		s, err := LoadScript(opts.ScriptPath)
		if err != nil {
			return nil, err
		}
		return NewScripted(s), nil
	}
	return nil, fmt.Errorf("no adapter registered for provider %q", provider)
}

func newHTTP(name string, d dialect, opts Options) (*httpProvider, error) {
	if opts.APIKey == "" {
		hint := ""
		if d == dialectOpenAI {
			hint = " (servers that ignore keys, such as a local Ollama, accept any value)"
		}
		return nil, &Error{Class: ClassMissingCredential, Message: fmt.Sprintf(
			"%s needs an API key: set %s%s; to run offline use --provider scripted --script FILE",
			name, keyEnv(name), hint)}
	}
	base := strings.TrimSpace(opts.BaseURL)
	if base == "" {
		if d == dialectOpenAI {
			return nil, fmt.Errorf("%s needs a base URL: set OPENAI_BASE_URL or pass --base-url (for example http://127.0.0.1:11434/v1)", name)
		}
		base = DefaultDeepSeekBaseURL
	}
	base = strings.TrimRight(base, "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: base URL %q is not an http(s) URL", name, base)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s: base URL %q must not have a query or fragment", name, base)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%s: base URL must not carry credentials; use the API key variable", name)
	}
	return newHTTPProvider(name, d, base, opts), nil
}

// deepseekCaps describes DeepSeek models. Unknown ids pass through with the
// same caps (model names change; read them from config, spec §1.1).
func deepseekCaps(model string) Caps {
	return Caps{
		// Images: only the flash models accept image input (pricing page).
		Images:           model == "deepseek-flash" || strings.HasPrefix(model, "deepseek-v4-flash"),
		Efforts:          []string{"off", "minimal", "low", "medium", "high", "xhigh", "max", "ultra"},
		DefaultEffort:    "high",
		DefaultMaxTokens: DeepSeekDefaultMaxTokens,
		ContextWindow:    1_000_000,
	}
}

// openAICompatibleContextWindow is a conservative guess for endpoints whose
// window we cannot know; configuration should override it.
const openAICompatibleContextWindow = 128_000

// openAICaps describes a model behind an OpenAI-compatible endpoint. We
// know nothing certain about it: images are assumed only for model names
// containing "vision" (llava-style names are the caller's to configure),
// max_tokens is omitted unless asked for, and "off" simply means no
// reasoning_effort is sent.
func openAICaps(model string) Caps {
	return Caps{
		Images:           strings.Contains(strings.ToLower(model), "vision"),
		Efforts:          []string{"off", "low", "medium", "high"},
		DefaultEffort:    "",
		DefaultMaxTokens: 0,
		ContextWindow:    openAICompatibleContextWindow,
	}
}

// Names lists the registered providers, sorted, so a setting naming one
// can be checked (and the valid names listed) before anything is created.
func Names() []string {
	return []string{ProviderDeepSeek, ProviderOpenAI, ProviderScripted}
}

// Efforts lists the reasoning efforts a provider accepts whatever the model,
// so a setting can be checked before anything is created; nil for a
// provider that is not registered.
func Efforts(provider string) []string {
	switch provider {
	case ProviderDeepSeek:
		return deepseekCaps("").Efforts
	case ProviderOpenAI:
		return openAICaps("").Efforts
	case ProviderScripted:
		return scriptedEfforts
	}
	return nil
}

// deepseekEffort is the reasoning_effort DeepSeek runs an effort name as:
// its API takes low, high and max, and maps minimal to low, medium and
// xhigh to high, ultra to max (the names other providers use); dsh sends
// the mapped value, so a server that knows only the three still works.
func deepseekEffort(effort string) string {
	switch effort {
	case "minimal":
		return "low"
	case "medium", "xhigh":
		return "high"
	case "ultra":
		return "max"
	}
	return effort
}

func validEffort(c Caps, effort string) bool {
	return slices.Contains(c.Efforts, effort)
}

// CheckModel reports whether provider can be asked for the model id, for
// a model named by a file (a custom command's frontmatter) rather than
// by the user's own settings, which pass any id through. DeepSeek's API
// serves only its own models (deepseek-…); an OpenAI-compatible endpoint
// and a script are asked for any id.
func CheckModel(provider, id string) error {
	if id == "" || len(id) > 128 || strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("%q is not a model id", id)
	}
	if provider == ProviderDeepSeek && !strings.HasPrefix(id, "deepseek-") {
		return fmt.Errorf("%s serves DeepSeek's models (deepseek-…), not %q", provider, id)
	}
	return nil
}
