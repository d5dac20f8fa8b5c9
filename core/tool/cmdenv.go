package tool

import (
	"net/url"
	"slices"
	"strings"
)

// BaseCommandEnv are the variables of dsh's environment that a command the
// model runs inherits, by exact name; BaseCommandEnvPrefixes by prefix.
// Everything else (database URLs, PGPASSWORD, GITHUB_PAT, SSH_AUTH_SOCK,
// cloud credentials, the API keys) stays with dsh unless the commandEnv
// setting passes it. The set is what shells, compilers and package
// managers need to find their tools, caches and certificates, and nothing
// that names a secret or a socket to an agent holding one.
var BaseCommandEnv = []string{
	// the session and the terminal
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "NO_COLOR", "LANG", "LANGUAGE", "TZ",
	"TMPDIR", "HOSTNAME", "CI",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_DIRS",
	// certificates (corporate CAs)
	"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
	// C and linkers
	"CC", "CXX", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "PKG_CONFIG_PATH", "LD_LIBRARY_PATH",
	"LIBRARY_PATH", "CPATH",
	// Go
	"GOPATH", "GOROOT", "GOBIN", "GOCACHE", "GOMODCACHE", "GOENV", "GOFLAGS", "GOPROXY", "GOPRIVATE", "GONOPROXY",
	"GONOSUMDB", "GOSUMDB", "GOTOOLCHAIN", "GOEXPERIMENT", "GOOS", "GOARCH", "CGO_ENABLED",
	// Rust
	"CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "RUSTFLAGS", "CARGO_TARGET_DIR",
	// JVM
	"JAVA_HOME", "JAVA_TOOL_OPTIONS", "MAVEN_HOME", "M2_HOME", "MAVEN_OPTS", "GRADLE_HOME", "GRADLE_USER_HOME",
	"GRADLE_OPTS",
	// JavaScript
	"NODE_PATH", "NODE_OPTIONS", "NODE_ENV", "NVM_DIR", "NVM_BIN", "NPM_CONFIG_PREFIX", "NPM_CONFIG_CACHE",
	"npm_config_prefix", "npm_config_cache", "PNPM_HOME", "YARN_CACHE_FOLDER", "BUN_INSTALL", "DENO_DIR",
	"DENO_INSTALL", "VOLTA_HOME", "COREPACK_HOME",
	// Python, Ruby, .NET and version managers
	"VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONUNBUFFERED",
	"PYTHONDONTWRITEBYTECODE", "PYENV_ROOT", "PIP_CACHE_DIR", "UV_CACHE_DIR", "POETRY_HOME", "PIPX_HOME",
	"GEM_HOME", "GEM_PATH", "BUNDLE_PATH", "RBENV_ROOT", "DOTNET_ROOT", "ANDROID_HOME", "ANDROID_SDK_ROOT",
	"SDKMAN_DIR", "ASDF_DIR", "ASDF_DATA_DIR", "MISE_DATA_DIR",
	// git's identity
	"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
}

// BaseCommandEnvPrefixes pass every variable whose name starts with one
// of them (locale categories).
var BaseCommandEnvPrefixes = []string{"LC_"}

// proxyEnv are passed when their value carries no password: a proxy URL
// with user:password@ in it is a credential.
var proxyEnv = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy"}

// CommandEnv returns the environment of a command the model runs: the
// variables of environ that the base set names, plus those pass names
// (an exact name, or a prefix ending in '*': "PG*", "MYAPP_*"). The model
// API keys are never passed, whatever pass says.
func CommandEnv(environ []string, pass []string) []string {
	out := make([]string, 0, len(BaseCommandEnv))
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || isModelKey(name) {
			continue
		}
		if inBase(name, value) || Passes(pass, name) {
			out = append(out, kv)
		}
	}
	return out
}

// Passes reports whether name is one the entries of pass name: exactly,
// or by a prefix written with a trailing '*'.
func Passes(pass []string, name string) bool {
	for _, p := range pass {
		if pre, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(name, pre) {
				return true
			}
		} else if p == name {
			return true
		}
	}
	return false
}

func inBase(name, value string) bool {
	if slices.Contains(BaseCommandEnv, name) {
		return true
	}
	for _, p := range BaseCommandEnvPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	if slices.Contains(proxyEnv, name) {
		u, err := url.Parse(value)
		if err != nil {
			return !strings.Contains(value, "@")
		}
		_, hasPass := u.User.Password()
		return !hasPass
	}
	return false
}

// isModelKey names the API keys dsh itself holds: never a command's.
func isModelKey(name string) bool {
	switch strings.ToUpper(name) {
	case "DEEPSEEK_API_KEY", "OPENAI_API_KEY":
		return true
	}
	return false
}

// ValidCommandEnvEntry reports what is wrong with one commandEnv entry,
// or "": a variable name, or a prefix of one followed by '*'.
func ValidCommandEnvEntry(e string) string {
	name := strings.TrimSuffix(e, "*")
	if name == "" {
		return "an empty name (a lone * would pass every variable, credentials included; list them)"
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return "not a variable name (letters, digits and _, optionally ending in * for a prefix)"
		}
	}
	return ""
}
