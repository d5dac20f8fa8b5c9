package client

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/goleak"

	"github.com/dsh-dev/dsh/sdkrpc/dispatch"
	"github.com/dsh-dev/dsh/sdkrpc/ndjson"
	"github.com/dsh-dev/dsh/sdkrpc/protocol"
)

// The test binary doubles as a misbehaving runtime: with DSH_FAKE_RUNTIME
// set, TestMain runs fakeRuntime instead of the tests.
const fakeEnv = "DSH_FAKE_RUNTIME"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeEnv); mode != "" {
		fakeRuntime(mode)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// fakeRuntime modes:
//
//	ok              serves initialize; shutdown answers and exits 0; EOF exits 0
//	exit-on-eof     never answers shutdown; exits 0 on stdin EOF
//	ignore-eof      never answers shutdown; survives EOF; dies on SIGTERM
//	ignore-term     like ignore-eof and ignores SIGTERM: only SIGKILL works
//	crash           writes 500 stderr lines and exits 3 on initialize
//	init-error      answers initialize with an error
//	sleep           does nothing for a minute
func fakeRuntime(mode string) {
	fmt.Fprintf(os.Stderr, "fake runtime %s pid %d\n", mode, os.Getpid())
	if mode == "sleep" {
		time.Sleep(time.Minute)
		return
	}
	if mode == "ignore-term" {
		signal.Ignore(syscall.SIGTERM)
	}
	handle := func(ctx context.Context, c *dispatch.Call) (any, error) {
		switch c.Method {
		case protocol.MethodInitialize:
			switch mode {
			case "crash":
				for i := range 500 {
					fmt.Fprintf(os.Stderr, "line %d\n", i)
				}
				os.Exit(3)
			case "init-error":
				return nil, protocol.NoAdapterError("acme")
			}
			return protocol.InitializeResult{ServerInfo: protocol.ServerInfo{Name: protocol.ServerName, Version: "test"}}, nil
		case protocol.MethodShutdown:
			if mode == "ok" {
				id, _ := json.Marshal(c.ID)
				fmt.Fprintf(os.Stdout, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", id)
				os.Exit(0)
			}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nil, protocol.UnknownMethodError(c.Method)
	}
	h := dispatch.New(handle, dispatch.Options{})
	conn := jsonrpc2.NewConn(context.Background(), ndjson.NewSplit(os.Stdin, os.Stdout, nil, ndjson.Options{}), h,
		jsonrpc2.SetLogger(printfLogger{discard()}))
	<-conn.DisconnectNotify()
	if mode == "ok" || mode == "exit-on-eof" || mode == "init-error" {
		return
	}
	for {
		time.Sleep(time.Hour)
	}
}
