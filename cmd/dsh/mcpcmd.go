package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dsh-dev/dsh/core/mcp"
)

const mcpUsage = `Usage: dsh mcp list [--config FILE]
       dsh mcp add NAME [--env K=V]... -- COMMAND [ARGS...]
       dsh mcp add NAME --url URL [--type http|sse] [--header 'K: V']...
       dsh mcp remove NAME

Manage the config file's MCP servers ("mcpServers"). list starts each configured server as a session would
(waiting at most its start timeout) and shows its state, tool count and, for a failed one, why. add and remove
edit the config file in place (atomically; its other keys are kept). Values may use ${VAR} and ${VAR:-default},
expanded from the environment when a session starts the server.
`

// mcpCommand is `dsh mcp list|add|remove`.
func mcpCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, mcpUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	switch args[0] {
	case "list", "ls":
		return mcpList(args[1:], stdout, stderr)
	case "add":
		return mcpAdd(args[1:], stdout, stderr)
	case "remove", "rm":
		return mcpRemove(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "dsh mcp: unknown subcommand %q (want list, add or remove)\n", args[0])
	return 2
}

// mcpConfigPath is the config file the subcommands edit: --config, else
// DSH_CONFIG, else the default one.
func mcpConfigPath(flagged string) (string, error) {
	if p := first(flagged, os.Getenv("DSH_CONFIG")); p != "" {
		return p, nil
	}
	dir := configHome()
	if dir == "" {
		return "", fmt.Errorf("no config folder: set XDG_CONFIG_HOME or HOME, or DSH_CONFIG")
	}
	return dir + "/dsh/config.json", nil
}

func mcpList(args []string, stdout, stderr io.Writer) int {
	s, pos, code := parseCommon("mcp list", "dsh mcp list [flags]", "Start each configured MCP server and show its state.", args, stderr, stdout, "auto", nil)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "dsh mcp list: unexpected argument %q\n", pos[0])
		return 2
	}
	if len(s.MCPServers) == 0 {
		fmt.Fprintf(stdout, "No MCP servers are configured (config file: %s). Add one with: dsh mcp add NAME -- COMMAND ARGS...\n", first(s.ConfigPath, "none"))
		return 0
	}
	cwd, _ := os.Getwd()
	set := mcp.Start(s.MCPServers, mcp.Options{Cwd: cwd, Version: version, Restart: mcp.RestartPolicy{Max: -1}})
	ctx, cancel := context.WithTimeout(context.Background(), mcp.DefaultStartTimeout+5*time.Second)
	set.WaitStarted(ctx)
	cancel()
	st := set.Status()
	closeCtx, done := context.WithTimeout(context.Background(), shutdownGrace)
	_ = set.Close(closeCtx)
	done()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tTOOLS\tSERVER")
	failed := false
	for _, x := range st {
		tools := "-"
		if x.State == mcp.StateReady {
			tools = fmt.Sprint(x.Tools)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", x.Name, x.State, tools, x.Describe)
		if x.Error != "" {
			failed = true
			fmt.Fprintf(tw, "\t  error: %s\t\t\n", x.Error)
		}
	}
	if err := tw.Flush(); err != nil {
		return 1
	}
	if failed {
		return 1
	}
	return 0
}

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ", ") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func mcpAdd(args []string, stdout, stderr io.Writer) int {
	var command []string
	for i, a := range args {
		if a == "--" {
			args, command = args[:i], args[i+1:]
			break
		}
	}
	var url, typ, config string
	var envs, headers multi
	pos, code := noFlags("mcp add", "dsh mcp add NAME [--env K=V]... -- COMMAND [ARGS...] | dsh mcp add NAME --url URL", mcpUsage, args, stdout, stderr,
		func(fs *flag.FlagSet) {
			fs.StringVar(&url, "url", "", "the server's URL (an HTTP server)")
			fs.StringVar(&typ, "type", "", "http (default with --url) or sse")
			fs.Var(&envs, "env", "K=V set in a stdio server's environment (repeatable)")
			fs.Var(&headers, "header", "'K: V' sent to an HTTP server (repeatable)")
			fs.StringVar(&config, "config", "", "config file [$DSH_CONFIG]")
		})
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "dsh mcp add: give the server's NAME, then -- COMMAND ARGS... or --url URL")
		return 2
	}
	name := pos[0]
	entry, err := mcpEntry(name, url, typ, command, envs, headers)
	if err != nil {
		fmt.Fprintf(stderr, "dsh mcp add: %v\n", err)
		return 2
	}
	return editMCPServers(config, stdout, stderr, "add", func(servers map[string]json.RawMessage) (string, error) {
		_, had := servers[name]
		servers[name] = entry
		if had {
			return fmt.Sprintf("replaced MCP server %q", name), nil
		}
		return fmt.Sprintf("added MCP server %q", name), nil
	})
}

// mcpEntry builds one server's config entry and checks it as a session
// would (a bad one is refused here rather than failing later).
func mcpEntry(name, url, typ string, command []string, envs, headers []string) (json.RawMessage, error) {
	e := map[string]any{}
	switch {
	case url != "" && len(command) > 0:
		return nil, fmt.Errorf("give either --url or -- COMMAND, not both")
	case url != "":
		if len(envs) > 0 {
			return nil, fmt.Errorf("--env is for a stdio server; an HTTP server takes --header")
		}
		e["url"] = url
		if typ != "" {
			e["type"] = typ
		}
		h := map[string]string{}
		for _, kv := range headers {
			k, v, ok := strings.Cut(kv, ":")
			if !ok {
				return nil, fmt.Errorf("--header %q: want 'Name: value'", kv)
			}
			h[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
		if len(h) > 0 {
			e["headers"] = h
		}
	case len(command) > 0:
		if len(headers) > 0 || typ != "" {
			return nil, fmt.Errorf("--header and --type are for an HTTP server (--url)")
		}
		e["command"] = command[0]
		if len(command) > 1 {
			e["args"] = command[1:]
		}
		env := map[string]string{}
		for _, kv := range envs {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("--env %q: want NAME=value", kv)
			}
			env[k] = v
		}
		if len(env) > 0 {
			e["env"] = env
		}
	default:
		return nil, fmt.Errorf("give the server: -- COMMAND ARGS... or --url URL")
	}
	raw, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	cfgs, err := mcp.ParseFile(json.RawMessage(fmt.Sprintf("{%q: %s}", name, raw)))
	if err == nil && len(cfgs) == 1 && cfgs[0].Invalid != "" && !strings.Contains(cfgs[0].Invalid, "is not set") {
		err = fmt.Errorf("%s", cfgs[0].Invalid)
	}
	if err == nil && strings.TrimSpace(name) == "" {
		err = fmt.Errorf("the server's name is empty")
	}
	return raw, err
}

func mcpRemove(args []string, stdout, stderr io.Writer) int {
	var config string
	pos, code := noFlags("mcp remove", "dsh mcp remove NAME", "Remove an MCP server from the config file.", args, stdout, stderr,
		func(fs *flag.FlagSet) { fs.StringVar(&config, "config", "", "config file [$DSH_CONFIG]") })
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "dsh mcp remove: give the server's NAME")
		return 2
	}
	name := pos[0]
	return editMCPServers(config, stdout, stderr, "remove", func(servers map[string]json.RawMessage) (string, error) {
		if _, ok := servers[name]; !ok {
			return "", fmt.Errorf("no MCP server %q in the config file (dsh mcp list shows them)", name)
		}
		delete(servers, name)
		return fmt.Sprintf("removed MCP server %q", name), nil
	})
}

// editMCPServers changes the config file's mcpServers object with edit
// and writes the file back atomically, every other key as it was.
func editMCPServers(flagged string, stdout, stderr io.Writer, verb string, edit func(map[string]json.RawMessage) (string, error)) int {
	path, err := mcpConfigPath(flagged)
	if err != nil {
		fmt.Fprintf(stderr, "dsh mcp %s: %v\n", verb, err)
		return 1
	}
	raw, err := readConfigObject(path)
	if err != nil {
		fmt.Fprintf(stderr, "dsh mcp %s: %v\n", verb, err)
		return 1
	}
	servers := map[string]json.RawMessage{}
	if v, ok := raw["mcpServers"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &servers); err != nil {
			fmt.Fprintf(stderr, "dsh mcp %s: config file %s: \"mcpServers\" must be an object of servers by name\n", verb, path)
			return 1
		}
	}
	msg, err := edit(servers)
	if err != nil {
		fmt.Fprintf(stderr, "dsh mcp %s: %v\n", verb, err)
		return 1
	}
	b, err := json.Marshal(servers)
	if err != nil {
		fmt.Fprintf(stderr, "dsh mcp %s: %v\n", verb, err)
		return 1
	}
	raw["mcpServers"] = b
	if err := writeConfigObject(path, raw); err != nil {
		fmt.Fprintf(stderr, "dsh mcp %s: %v\n", verb, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s (in %s)\n", msg, path)
	return 0
}
