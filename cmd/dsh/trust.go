package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dsh-dev/dsh/core/ext"
)

// trustCommand records that the user trusts a project: its own hooks
// (.dsh/settings.json, .claude/settings.json) and the !-lines of its
// command files may run. A cloned repository must not run commands by
// itself, so nothing of a project's runs before this.
func trustCommand(args []string, stdout, stderr io.Writer) int {
	var revoke, list bool
	var config string
	pos, code := noFlags("trust", "dsh trust [--revoke | --list] [DIR]",
		"Trust the project in DIR (default: the current folder) and its sub-folders: its hooks and the shell lines of its\n"+
			"command files may run. The folder is added to trustedProjects in the config file.",
		args, stdout, stderr, func(fs *flag.FlagSet) {
			fs.BoolVar(&revoke, "revoke", false, "stop trusting DIR")
			fs.BoolVar(&list, "list", false, "list the trusted folders")
			fs.StringVar(&config, "config", "", "config file [$DSH_CONFIG]")
		})
	if code >= 0 {
		return code
	}
	if len(pos) > 1 {
		fmt.Fprintf(stderr, "dsh trust: one folder at most, got %d\n", len(pos))
		return 2
	}
	path := first(config, os.Getenv("DSH_CONFIG"))
	if path == "" {
		dir := configHome()
		if dir == "" {
			fmt.Fprintln(stderr, "dsh trust: no config folder: set XDG_CONFIG_HOME or HOME, or DSH_CONFIG")
			return 1
		}
		path = filepath.Join(dir, "dsh", "config.json")
	}
	raw, err := readConfigObject(path)
	if err != nil {
		fmt.Fprintf(stderr, "dsh trust: %v\n", err)
		return 1
	}
	var trusted []string
	if t, ok := raw["trustedProjects"]; ok {
		if err := json.Unmarshal(t, &trusted); err != nil {
			fmt.Fprintf(stderr, "dsh trust: config file %s: \"trustedProjects\" must be a list of folders\n", path)
			return 1
		}
	}
	if list {
		for _, t := range trusted {
			fmt.Fprintln(stdout, t)
		}
		return 0
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	abs, err := trustDir(dir)
	if err != nil {
		fmt.Fprintf(stderr, "dsh trust: %v\n", err)
		return 1
	}
	switch {
	case revoke:
		n := len(trusted)
		trusted = slices.DeleteFunc(trusted, func(t string) bool { return filepath.Clean(t) == abs })
		if len(trusted) == n {
			fmt.Fprintf(stderr, "dsh trust: %s is not in trustedProjects (a parent folder may be: dsh trust --list)\n", abs)
			return 1
		}
	case slices.Contains(trusted, abs):
		fmt.Fprintf(stdout, "%s is already trusted\n", abs)
		return 0
	default:
		if ext.Trusted(abs, trusted) {
			fmt.Fprintf(stdout, "%s is already trusted (under a trusted folder)\n", abs)
			return 0
		}
		trusted = append(trusted, abs)
	}
	b, _ := json.Marshal(trusted)
	raw["trustedProjects"] = b
	if err := writeConfigObject(path, raw); err != nil {
		fmt.Fprintf(stderr, "dsh trust: %v\n", err)
		return 1
	}
	if revoke {
		fmt.Fprintf(stdout, "no longer trusted: %s (in %s)\n", abs, path)
	} else {
		fmt.Fprintf(stdout, "trusted: %s (in %s); its hooks and command shell lines will run\n", abs, path)
	}
	return 0
}

// trustDir is dir made absolute with symlinks resolved; it must be a
// folder.
func trustDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s is not a folder", dir)
	}
	return abs, nil
}

// readConfigObject reads the config file as an object of raw values (an
// absent file is an empty object); the file must pass the same checks as
// when dsh starts, so trust never writes into a file dsh would refuse.
func readConfigObject(path string) (map[string]json.RawMessage, error) {
	data, err := readConfigFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]json.RawMessage{}, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := parseConfig(path, data); err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// writeConfigObject writes the config file whole, indented, keys sorted,
// through a temporary file renamed over it (fsynced), so a crash leaves
// the old file or the new one.
func writeConfigObject(path string, raw map[string]json.RawMessage) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(raw); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(buf.Bytes())
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// hooksSummary counts the config file's hooks by event for dsh config.
func hooksSummary(s Settings) string {
	hooks, diags := ext.ParseHooks(s.Hooks, s.ConfigPath, ext.ScopeUser)
	count := map[string]int{}
	for _, h := range hooks {
		count[h.Event]++
	}
	var parts []string
	for _, ev := range []string{ext.PreToolUse, ext.PostToolUse, ext.UserPromptSubmit, ext.Stop, ext.SessionStart, ext.PreCompact} {
		if n := count[ev]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", ev, n))
		}
	}
	out := strings.Join(parts, ", ")
	if out == "" {
		out = "none usable"
	}
	for _, d := range diags {
		out += "; " + d.Msg
	}
	return out
}
