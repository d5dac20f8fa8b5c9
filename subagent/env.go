package subagent

import (
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
	"github.com/dsh-dev/dsh/core/permission"
	"github.com/dsh-dev/dsh/core/tool"
)

// EnvDelegationDepth carries the delegation depth to an out-of-process
// child: a dsh child uses it as the depth of the sessions it creates.
const EnvDelegationDepth = "DSH_DELEGATION_DEPTH"

// EnvParentSession names the delegating session to an out-of-process
// child: a dsh child records it as the parentSession of its sessions, so
// listings and `dsh run -c` leave them to the parent.
const EnvParentSession = "DSH_PARENT_SESSION"

// EnvMaxTokens carries the parent's output cap to a dsh child whose
// protocol has no field for it (ACP).
const EnvMaxTokens = "DSH_MAX_TOKENS"

// dshPassThrough are the variables a dsh child needs to reach the parent's
// model and store; they come from the parent's environment unless
// SetDshEnv overrides them.
var dshPassThrough = []string{
	"DSH_SESSION_ROOT", "DSH_HOME", "DSH_CONFIG", "DSH_SCRIPT", "DSH_LOG_LEVEL", "DSH_STEP_CAP",
	"DSH_FIRST_DATA_TIMEOUT", "DSH_STALL_TIMEOUT", "DEEPSEEK_BASE_URL", "OPENAI_BASE_URL",
	// What contains and limits the child's tools as the parent's are.
	"DSH_SANDBOX", "DSH_SANDBOX_NETWORK", "DSH_SANDBOX_HIDE_PATHS", "DSH_SANDBOX_WRITABLE_PATHS",
	"DSH_COMMAND_ENV", "DSH_WEB_FETCH_ALLOW_PRIVATE", "DSH_ALLOWED_TOOLS", "DSH_DISALLOWED_TOOLS",
	"DSH_MCP_START_WAIT",
}

// keyEnv is the API key variable of a model provider ("" if it has none).
func keyEnv(provider string) string {
	switch provider {
	case "deepseek-official":
		return "DEEPSEEK_API_KEY"
	case "openai-compatible":
		return "OPENAI_API_KEY"
	}
	return ""
}

// childEnv builds the environment of an out-of-process child (package doc,
// "The child's environment").
func (r *Registry) childEnv(p *provider, cfg event.Config, mode permission.Mode, depth int, parent string) []string {
	vars := map[string]string{}
	for _, kv := range tool.ScrubEnv(os.Environ()) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.HasPrefix(strings.ToUpper(k), "DSH_") {
			continue
		}
		vars[k] = v
	}
	if p.self {
		r.envMu.Lock()
		over := r.dshEnv
		r.envMu.Unlock()
		pick := func(name string) {
			v, ok := over[name]
			if !ok {
				v = os.Getenv(name)
			}
			if v == "" {
				delete(vars, name)
				return
			}
			vars[name] = v
		}
		for _, name := range dshPassThrough {
			pick(name)
		}
		for name, v := range over {
			if v == "" {
				delete(vars, name)
			} else {
				vars[name] = v
			}
		}
		if k := keyEnv(cfg.Provider); k != "" {
			pick(k)
		}
		setOrDrop(vars, "DSH_PROVIDER", cfg.Provider)
		setOrDrop(vars, "DSH_MODEL", cfg.Model)
		setOrDrop(vars, "DSH_REASONING_EFFORT", cfg.ReasoningEffort)
		setOrDrop(vars, "DSH_PERMISSION_MODE", string(mode))
		if cfg.MaxTokens > 0 {
			vars[EnvMaxTokens] = strconv.Itoa(cfg.MaxTokens)
		}
	}
	vars[EnvDelegationDepth] = strconv.Itoa(depth)
	setOrDrop(vars, EnvParentSession, parent)
	for k, v := range p.env {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

func setOrDrop(vars map[string]string, k, v string) {
	if v == "" {
		delete(vars, k)
		return
	}
	vars[k] = v
}
