// Package mcptest is an MCP server written with the Go SDK's server side,
// for dsh's tests: it lists, calls, fails, sends images and resources,
// blocks until cancelled, changes its tool list, crashes, and misbehaves on
// stdout on request. Main runs it on stdio (the mcptestserver command and
// test binaries re-executing themselves); Handler serves streamable HTTP.
package mcptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// PNG is a 1x1 PNG the image tool returns.
var PNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

// Corrupt is a text that, in a result written by Main, makes the result's
// line malformed JSON (cut in half), as a broken server would write it.
const Corrupt = "CORRUPT-THIS-FRAME"

// Options of a test server.
type Options struct {
	// OnCancel is called when a call to "block" is cancelled.
	OnCancel func()
	// OnCall is called with each tool name as a call arrives.
	OnCall func(name string)
	// Exit ends the process (the crash tool); nil leaves crash out.
	Exit func(code int)
}

type textIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type sumOut struct {
	Sum float64 `json:"sum"`
}

type sizeIn struct {
	MiB float64 `json:"mib"`
}

type empty struct{}

func no() *bool { v := false; return &v }

// NewServer builds the test server.
func NewServer(o Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "dsh-mcptest", Version: "1"}, nil)
	called := func(name string) {
		if o.OnCall != nil {
			o.OnCall(name)
		}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "Echo text", OpenWorldHint: no()}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			called("echo")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, sumOut, error) {
			called("add")
			return nil, sumOut{Sum: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "image", Description: "Return a tiny PNG.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			called("image")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a pixel"},
				&mcp.ImageContent{MIMEType: "image/png", Data: PNG}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "resource", Description: "Return an embedded resource and a link."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			called("resource")
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://notes/1", MIMEType: "text/plain", Text: "the notes"}},
				&mcp.ResourceLink{URI: "test://notes/2", Name: "second", MIMEType: "text/plain"},
			}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fail on purpose (isError).",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: no()}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			called("fail")
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it failed on purpose"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "block", Description: "Block until cancelled.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			called("block")
			<-ctx.Done()
			if o.OnCancel != nil {
				o.OnCancel()
			}
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Return a text of the given size in MiB.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in sizeIn) (*mcp.CallToolResult, any, error) {
			called("big")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", int(in.MiB*(1<<20)))}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "garble", Description: "Answer with a malformed JSON line (stdio only)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			called("garble")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: Corrupt}}}, nil, nil
		})
	var once sync.Once
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Add the tool \"extra\" (tools/list_changed)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			called("grow")
			once.Do(func() {
				mcp.AddTool(s, &mcp.Tool{Name: "extra", Description: "A tool added at run time."},
					func(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
						called("extra")
						return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "extra ran"}}}, nil, nil
					})
			})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "grown"}}}, nil, nil
		})
	if o.Exit != nil {
		mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit the server process mid-call."},
			func(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
				called("crash")
				fmt.Fprintln(os.Stderr, "mcptest: crashing on purpose")
				o.Exit(3)
				return nil, nil, nil
			})
	}
	return s
}

// Handler serves the test server over streamable HTTP.
func Handler(o Options) http.Handler {
	srv := NewServer(o)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}

// Restartable serves the test server over streamable HTTP, as Handler,
// and Restart makes it forget its sessions as a restarted server does: a
// request of an old session is answered 404.
type Restartable struct {
	o   Options
	mu  sync.Mutex
	srv *mcp.Server
	h   http.Handler
	old []*mcp.Server
}

// NewRestartable starts serving a fresh test server.
func NewRestartable(o Options) *Restartable {
	r := &Restartable{o: o}
	r.Restart()
	return r
}

// Restart swaps in a fresh server; the old one keeps its sessions (its
// open streams) until Close, but is no longer reached.
func (r *Restartable) Restart() {
	srv := NewServer(r.o)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv != nil {
		r.old = append(r.old, r.srv)
	}
	r.srv, r.h = srv, h
}

func (r *Restartable) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	h := r.h
	r.mu.Unlock()
	h.ServeHTTP(w, req)
}

// Close ends the sessions the servers before the last restart still hold.
func (r *Restartable) Close() {
	r.mu.Lock()
	old := r.old
	r.old = nil
	r.mu.Unlock()
	for _, srv := range old {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	}
}

// Main runs the test server on stdio, shaped by the environment:
//
//	MCPTEST_EXIT=n          write to stderr and exit n at once
//	MCPTEST_HANG=1          never answer (read stdin until it closes)
//	MCPTEST_BANNER=1        print a non-JSON line to stdout first
//	MCPTEST_NOISE=1         print JSON lines that are not JSON-RPC
//	                        ({"hello":"world"}, [1,2,3], a bare string,
//	                        an object with jsonrpc 1.0) before each answer
//	MCPTEST_BAD_TOOLS=1     add to tools/list an undecodable entry and
//	                        one with a 2,000-deep input schema
//	MCPTEST_CANCEL_MARK=f   create file f when a "block" call is cancelled
//	MCPTEST_CALL_LOG=f      append each called tool's name to file f
//	MCPTEST_START_LOG=f     append a line to file f at each start
//	MCPTEST_EXIT_IF=f       exit 5 at once (as MCPTEST_EXIT) when file f exists
//	MCPTEST_PID_FILE=f      write the process id to file f (to kill it)
func Main() {
	if f := os.Getenv("MCPTEST_PID_FILE"); f != "" {
		_ = os.WriteFile(f, []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o600)
	}
	if log := os.Getenv("MCPTEST_START_LOG"); log != "" {
		appendLine(log, "start")
	}
	if f := os.Getenv("MCPTEST_EXIT_IF"); f != "" {
		if _, err := os.Stat(f); err == nil {
			fmt.Fprintln(os.Stderr, "mcptest: refusing to start (MCPTEST_EXIT_IF)")
			os.Exit(5)
		}
	}
	if v := os.Getenv("MCPTEST_EXIT"); v != "" {
		fmt.Fprintln(os.Stderr, "mcptest: refusing to start (MCPTEST_EXIT)")
		code := 1
		fmt.Sscanf(v, "%d", &code)
		os.Exit(code)
	}
	if os.Getenv("MCPTEST_HANG") == "1" {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	if os.Getenv("MCPTEST_BANNER") == "1" {
		fmt.Println("mcptest server starting (this line is not JSON-RPC)")
	}
	o := Options{Exit: os.Exit}
	if mark := os.Getenv("MCPTEST_CANCEL_MARK"); mark != "" {
		o.OnCancel = func() { _ = os.WriteFile(mark, []byte("cancelled\n"), 0o600) }
	}
	if log := os.Getenv("MCPTEST_CALL_LOG"); log != "" {
		var mu sync.Mutex
		o.OnCall = func(name string) {
			mu.Lock()
			defer mu.Unlock()
			appendLine(log, name)
		}
	}
	t := &mcp.IOTransport{Reader: os.Stdin, Writer: &corrupter{w: os.Stdout,
		noise: os.Getenv("MCPTEST_NOISE") == "1", badTools: os.Getenv("MCPTEST_BAD_TOOLS") == "1"}}
	if err := NewServer(o).Run(context.Background(), t); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// appendLine appends a line to the file (which may be a FIFO a test reads).
func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		fmt.Fprintln(f, line)
		f.Close()
	}
}

// corrupter cuts in half every line that carries Corrupt, and writes the
// noise and bad tools Main's environment asks for.
type corrupter struct {
	mu              sync.Mutex
	w               io.Writer
	buf             bytes.Buffer
	noise, badTools bool
}

// noiseLines are valid JSON, none a JSON-RPC 2.0 message.
const noiseLines = `{"hello":"world"}
[1,2,3]
"just a string"
{"jsonrpc":"1.0","id":1,"result":{}}
{"jsonrpc":"2.0"}
[]
`

// BadTools are the names of the tools MCPTEST_BAD_TOOLS adds: one whose
// entry does not decode as a tool, one whose schema is 2,000 deep.
var BadTools = []string{"undecodable", "deep"}

// badToolEntries are the entries MCPTEST_BAD_TOOLS puts first in the
// tools/list result.
func badToolEntries() string {
	deep := strings.Repeat(`{"type":"object","properties":{"x":`, 2000) + `{"type":"string"}` + strings.Repeat(`}}`, 2000)
	return `{"name":"undecodable","inputSchema":"not a schema","annotations":7},` +
		`{"name":"deep","inputSchema":` + deep + `},`
}

func (c *corrupter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	r := bufio.NewReader(bytes.NewReader(c.buf.Bytes()))
	var done int
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			break
		}
		done += len(line)
		if bytes.Contains(line, []byte(Corrupt)) {
			line = append(line[:len(line)/2:len(line)/2], '\n')
		}
		if c.badTools && bytes.Contains(line, []byte(`"tools":[`)) {
			line = bytes.Replace(line, []byte(`"tools":[`), []byte(`"tools":[`+badToolEntries()), 1)
		}
		if c.noise {
			if _, err := io.WriteString(c.w, noiseLines); err != nil {
				return 0, err
			}
		}
		if _, err := c.w.Write(line); err != nil {
			return 0, err
		}
	}
	c.buf.Next(done)
	return len(p), nil
}

func (c *corrupter) Close() error { return nil }
