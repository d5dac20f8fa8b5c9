package model

import (
	"errors"
	"strings"
	"testing"
)

func TestNewUnknownProvider(t *testing.T) {
	_, err := New("gpt-magic", Options{APIKey: "k"})
	if err == nil || err.Error() != `no adapter registered for provider "gpt-magic"` {
		t.Fatalf("err = %v", err)
	}
}

func TestNewMissingKey(t *testing.T) {
	for provider, env := range map[string]string{ProviderDeepSeek: "DEEPSEEK_API_KEY", ProviderOpenAI: "OPENAI_API_KEY"} {
		_, err := New(provider, Options{BaseURL: "http://127.0.0.1:1"})
		var e *Error
		if !errors.As(err, &e) || e.Class != ClassMissingCredential {
			t.Fatalf("%s: err = %v", provider, err)
		}
		if !strings.Contains(e.Message, env) || !strings.Contains(e.Message, "--provider scripted --script FILE") {
			t.Fatalf("%s: message %q", provider, e.Message)
		}
	}
}

func TestNewBaseURL(t *testing.T) {
	p, err := New(ProviderDeepSeek, Options{APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.(*httpProvider).endpoint; got != "https://api.deepseek.com/chat/completions" {
		t.Fatalf("endpoint %q", got)
	}
	p, err = New(ProviderDeepSeek, Options{APIKey: "k", BaseURL: "http://127.0.0.1:9/v1/"})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.(*httpProvider).endpoint; got != "http://127.0.0.1:9/v1/chat/completions" {
		t.Fatalf("endpoint %q", got)
	}
	_, err = New(ProviderOpenAI, Options{APIKey: "k"})
	if err == nil || !strings.Contains(err.Error(), "OPENAI_BASE_URL") {
		t.Fatalf("err = %v", err)
	}
	for _, bad := range []string{"api.deepseek.com", "ftp://x", "http://", "http://user:pw@host", "https://h/v1?key=x"} {
		if _, err := New(ProviderDeepSeek, Options{APIKey: "k", BaseURL: bad}); err == nil {
			t.Errorf("base URL %q accepted", bad)
		}
	}
}

func TestNewScriptedNeedsFile(t *testing.T) {
	_, err := New(ProviderScripted, Options{})
	if err == nil || !strings.Contains(err.Error(), "--script FILE") {
		t.Fatalf("err = %v", err)
	}
	_, err = New(ProviderScripted, Options{ScriptPath: "/nonexistent/script.json"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/script.json") {
		t.Fatalf("err = %v", err)
	}
}

func TestEveryProviderBuilds(t *testing.T) {
	for _, n := range []string{ProviderDeepSeek, ProviderOpenAI, ProviderScripted} {
		if _, err := New(n, Options{APIKey: "k", BaseURL: "http://127.0.0.1:1", ScriptPath: "../../examples/hello.json"}); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

func TestCaps(t *testing.T) {
	ds, _ := New(ProviderDeepSeek, Options{APIKey: "k"})
	for model, images := range map[string]bool{"deepseek-flash": true, "deepseek-v4-flash": true,
		"deepseek-v4-flash-0917": true, "deepseek-v4-pro": false, "some-future-model": false} {
		c := ds.Caps(model)
		if c.Images != images || c.DefaultEffort != "high" || c.DefaultMaxTokens != 256000 || c.ContextWindow != 1_000_000 {
			t.Errorf("%s: %+v", model, c)
		}
	}
	oa, _ := New(ProviderOpenAI, Options{APIKey: "k", BaseURL: "http://127.0.0.1:1"})
	if c := oa.Caps("llama3.2-vision"); !c.Images || c.DefaultMaxTokens != 0 || c.DefaultEffort != "" {
		t.Errorf("%+v", c)
	}
	if oa.Caps("qwen3").Images {
		t.Error("images assumed")
	}
}
