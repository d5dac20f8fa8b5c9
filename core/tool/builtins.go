package tool

import "sort"

// Builtins returns the built-in tools with default options, sorted by
// name: bash, edit, glob, grep, job_kill, job_list, job_output,
// multi_edit, read, todo_write, web_fetch, write. A fresh slice each call.
func Builtins() []Tool { return BuiltinsWith(Options{}) }

// Options are the user's settings of the built-in tools.
type Options struct {
	WebFetch WebFetchOptions
	// CommandEnv are the variables (names, or prefixes ending in '*') that
	// commands inherit besides the base set (CommandEnv).
	CommandEnv []string
}

// BuiltinsWith returns the built-in tools configured by o, sorted by name.
// Options change behaviour only, never a name, schema or description, so
// the tool list stays byte-stable whatever the settings.
func BuiltinsWith(o Options) []Tool {
	return Sort([]Tool{readTool{}, writeTool{}, editTool{}, multiEditTool{}, globTool{}, grepTool{}, bashTool{envPass: o.CommandEnv}, todoTool{},
		jobOutputTool{}, jobKillTool{}, jobListTool{}, WebFetch(o.WebFetch)})
}

// Sort returns tools sorted by name (a new slice), so the tool list sent to
// the model is byte-stable whatever order tools were registered in: the
// provider's prefix cache depends on it.
func Sort(tools []Tool) []Tool {
	out := append([]Tool(nil), tools...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}
