package mcp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestParseFileShapes(t *testing.T) {
	got, err := ParseFile(json.RawMessage(`{
		"gh": {"command": "npx", "args": ["-y", "@x/gh"], "env": {"TOKEN": "t", "A": "1"}},
		"docs": {"type": "http", "url": "https://docs.example/mcp", "headers": {"Authorization": "Bearer k"}},
		"cursor": {"url": "http://127.0.0.1:9/mcp"},
		"old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
		"off": {"command": "x", "disabled": true},
		"nocmd": {"args": ["x"]},
		"badurl": {"type": "http", "url": "ftp://x"},
		"weird": {"type": "carrier-pigeon", "url": "http://x"},
		"notobj": 3
	}`))
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]ServerConfig{}
	var names []string
	for _, c := range got {
		by[c.Name] = c
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "badurl,cursor,docs,gh,nocmd,notobj,old,weird" {
		t.Fatalf("names %v (sorted, disabled left out)", names)
	}
	if g := by["gh"]; g.Transport != TransportStdio || g.Command != "npx" || len(g.Args) != 2 || g.Env[0].Name != "A" || g.Invalid != "" {
		t.Errorf("gh: %+v", g)
	}
	if d := by["docs"]; d.Transport != TransportHTTP || d.Headers[0].Value != "Bearer k" || d.Invalid != "" {
		t.Errorf("docs: %+v", d)
	}
	if c := by["cursor"]; c.Transport != TransportHTTP || c.Invalid != "" {
		t.Errorf("a url without type is http: %+v", c)
	}
	if o := by["old"]; o.Transport != TransportSSE || o.Invalid != "" {
		t.Errorf("old: %+v", o)
	}
	for name, want := range map[string]string{"nocmd": `needs a "command"`, "badurl": "not an http(s) URL",
		"weird": "unknown type", "notobj": "not an object"} {
		if !strings.Contains(by[name].Invalid, want) {
			t.Errorf("%s: Invalid %q, want %q", name, by[name].Invalid, want)
		}
	}
	if _, err := ParseFile(json.RawMessage(`[1]`)); err == nil {
		t.Error("an mcpServers that is not an object must be an error")
	}
	if got, err := ParseFile(nil); err != nil || got != nil {
		t.Error("no mcpServers is no servers")
	}
	if d := by["docs"].Describe(); strings.Contains(d, "Bearer") {
		t.Errorf("Describe must not show header values: %s", d)
	}
}

func TestNamesAreSanitisedStableAndUnique(t *testing.T) {
	n := newNamer(func(s string) bool { return s == "mcp__a__b" })
	if got := n.name("git hub", "search.code"); got != "mcp__git_hub__search_code" {
		t.Errorf("sanitised: %s", got)
	}
	if got := n.name("git_hub", "search_code"); got == "mcp__git_hub__search_code" || !strings.HasPrefix(got, "mcp__git_hub__search_code_") {
		t.Errorf("a collision after sanitising must get its own name: %s", got)
	}
	if got := n.name("a", "b"); got == "mcp__a__b" {
		t.Errorf("a reserved (built-in) name must not be taken: %s", got)
	}
	long := strings.Repeat("very-long-server-name", 4)
	a, b := n.name(long, strings.Repeat("t", 80)+"1"), n.name(long, strings.Repeat("t", 80)+"2")
	if len(a) > 64 || len(b) > 64 || a == b {
		t.Errorf("long names must be cut to 64 and stay apart: %s %s", a, b)
	}
	if n.name("git hub", "search.code") != "mcp__git_hub__search_code" {
		t.Error("a pair keeps its name")
	}
	for _, s := range []string{a, b, n.name("ü", "ß")} {
		for _, c := range s {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
				t.Errorf("%q has %q", s, c)
			}
		}
	}
}

func TestResponseID(t *testing.T) {
	for _, c := range []struct{ head, tail, want string }{
		{`{"jsonrpc":"2.0","id":7,"result":{"content":[`, "", "7"},
		{`{"jsonrpc":"2.0","id":"a-1","error":{`, "", `"a-1"`},
		{`{"result":{"content":[{"type":"text","text":"xx`, `xxx"}]},"jsonrpc":"2.0","id":12}`, "12"},
		{`{"jsonrpc":"2.0","method":"notifications/message","params":{`, `"id":3}`, ""},
		{`{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage"`, "", ""},
	} {
		if got := responseID([]byte(c.head), []byte(c.tail)); got != c.want {
			t.Errorf("responseID(%s … %s) = %q, want %q", c.head, c.tail, got, c.want)
		}
	}
}

func TestSchemasAreBoundedAndStable(t *testing.T) {
	s, req, err := normSchema(map[string]any{"properties": map[string]any{"b": map[string]any{"type": "string"}, "a": map[string]any{}}, "required": []any{"b"}})
	if err != nil || string(s) != `{"properties":{"a":{},"b":{"type":"string"}},"required":["b"],"type":"object"}` || len(req) != 1 {
		t.Errorf("schema %s %v %v", s, req, err)
	}
	big := map[string]any{"type": "object", "description": strings.Repeat("x", 20<<10)}
	if s, _, err := normSchema(big); err == nil || string(s) != `{"properties":{},"type":"object"}` {
		t.Errorf("an oversized schema must be replaced: %v", err)
	}
	if _, _, err := normSchema("nope"); err == nil {
		t.Error("a schema that is not an object must be replaced")
	}
}

// EncodeFile is the inverse of ParseFile for usable servers.
func TestEncodeFileRoundTrips(t *testing.T) {
	in := []ServerConfig{
		{Name: "docs", Transport: TransportHTTP, URL: "https://docs.example/mcp", Headers: []KV{{Name: "Authorization", Value: "Bearer x"}}, Source: "config"},
		{Name: "gh", Transport: TransportStdio, Command: "npx", Args: []string{"-y", "srv"}, Env: []KV{{Name: "A", Value: "1"}}, Source: "config"},
		{Name: "old", Transport: TransportSSE, URL: "https://old.example/sse", Source: "config"},
		{Name: "broken", Transport: TransportStdio, Invalid: "no command", Source: "config"},
	}
	got, err := ParseFile(EncodeFile(in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, in[:3]) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, in[:3])
	}
	if EncodeFile(nil) != nil || EncodeFile(in[3:]) != nil {
		t.Fatal("no usable server: want nil")
	}
}
