package tool

import "sort"

// Builtins returns the built-in tools, sorted by name: bash, edit, glob,
// grep, job_kill, job_list, job_output, multi_edit, read, todo_write,
// write. A fresh slice each call.
func Builtins() []Tool {
	return Sort([]Tool{readTool{}, writeTool{}, editTool{}, multiEditTool{}, globTool{}, grepTool{}, bashTool{}, todoTool{},
		jobOutputTool{}, jobKillTool{}, jobListTool{}})
}

// Sort returns tools sorted by name (a new slice), so the tool list sent to
// the model is byte-stable whatever order tools were registered in: the
// provider's prefix cache depends on it.
func Sort(tools []Tool) []Tool {
	out := append([]Tool(nil), tools...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}
