package headless

import (
	"errors"
	"flag"
	"io"
	"strconv"
	"strings"
)

// RunFlags are the options specific to `dsh run`. The shared settings flags
// (--provider, --model, …) are registered by the caller on the same FlagSet.
type RunFlags struct {
	// JSON selects the NDJSON run-event stream on stdout.
	JSON bool
	// SessionID is the session to adopt, verbatim (whitespace included);
	// meaningful only when SessionIDSet.
	SessionID    string
	SessionIDSet bool
}

// Flag names.
const (
	FlagJSON      = "json"
	FlagSessionID = "session-id"
)

// sessionIDValue records whether --session-id was given at all, so an
// explicit blank value is an error rather than "no flag".
type sessionIDValue struct{ f *RunFlags }

func (v sessionIDValue) String() string {
	if v.f == nil {
		return ""
	}
	return v.f.SessionID
}

func (v sessionIDValue) Set(s string) error {
	v.f.SessionID, v.f.SessionIDSet = s, true
	return nil
}

// ParseRunFlags registers --json and --session-id on fs, parses args and
// returns the run flags and the positionals (the task words).
//
// The grammar is the original's (commander), not Go's default: options and
// positionals may be interleaved; `--` ends options; a lone `-` is a
// positional; an option that takes a value takes the next argument whatever
// it looks like, so in `--session-id --json` the id is "--json"; both `-name`
// and `--name` spellings and `--name=value` are accepted. -h/--help, unless
// fs defines them, returns flag.ErrHelp. Every other failure is a
// *UsageError whose message has no "error: " prefix, e.g.
// "unknown option '--bogus'".
//
// Even when it fails, the returned RunFlags.JSON says whether the command
// line asked for --json, so the caller can report the usage error as an
// `error` event. fs must use flag.ContinueOnError; ParseRunFlags never
// prints (fs output is discarded while parsing). Call it once per FlagSet.
func ParseRunFlags(fs *flag.FlagSet, args []string) (RunFlags, []string, error) {
	var rf RunFlags
	if fs.ErrorHandling() != flag.ContinueOnError {
		return rf, nil, errors.New("headless: ParseRunFlags needs a flag.ContinueOnError FlagSet")
	}
	fs.BoolVar(&rf.JSON, FlagJSON, false, "write newline-delimited JSON run events to stdout")
	fs.Var(sessionIDValue{&rf}, FlagSessionID, "adopt the existing session with this `id`")

	fail := func(err error) (RunFlags, []string, error) {
		rf = RunFlags{JSON: JSONRequestedIn(fs, args)}
		return rf, nil, err
	}
	opts, pos, err := splitArgs(args, flagSetKind(fs), false)
	if err != nil {
		return fail(err)
	}
	norm := make([]string, 0, len(opts))
	for _, o := range opts {
		if o.hasValue {
			norm = append(norm, "-"+o.name+"="+o.value)
		} else {
			norm = append(norm, "-"+o.name)
		}
	}
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err = fs.Parse(norm)
	fs.SetOutput(out)
	if err != nil {
		return fail(&UsageError{Msg: err.Error(), Err: err})
	}
	if rf.SessionIDSet && strings.TrimSpace(rf.SessionID) == "" {
		return fail(usageErrorf("option '--%s <id>' must not be blank", FlagSessionID))
	}
	if pos == nil {
		pos = []string{}
	}
	return rf, pos, nil
}

// JSONRequestedIn reports whether args ask for --json, scanning them as the
// parser would: `--` ends options and an option's value is not an option.
// It uses fs (when non-nil) to know which options take a value, e.g. a
// shared bool flag; without it, it knows the run flags and the shared
// settings flags (all value-taking). An unknown option is skipped without
// taking a value, because its usage error should still honour a --json
// given after it.
func JSONRequestedIn(fs *flag.FlagSet, args []string) bool {
	kind := defaultKind
	if fs != nil {
		// The run flags may not be registered yet; fall back to what we
		// know for names fs does not define.
		fsKind := flagSetKind(fs)
		kind = func(name string) optKind {
			if k := fsKind(name); k != optUnknown {
				return k
			}
			return defaultKind(name)
		}
	}
	opts, _, _ := splitArgs(args, kind, true)
	want := false
	for _, o := range opts {
		if o.name != FlagJSON {
			continue
		}
		if !o.hasValue {
			want = true
			continue
		}
		b, err := strconv.ParseBool(o.value)
		// `--json=maybe` is an error, but the caller clearly wanted JSON.
		want = b || err != nil
	}
	return want
}

type optKind int

const (
	optUnknown optKind = iota
	optBool
	optValue
)

// defaultKind knows the dsh run options when no FlagSet is at hand.
func defaultKind(name string) optKind {
	switch name {
	case FlagJSON, "help", "h":
		return optBool
	case FlagSessionID, "provider", "model", "base-url", "reasoning-effort", "max-tokens",
		"session-root", "config", "permission-mode", "script":
		return optValue
	}
	return optUnknown
}

// boolFlag is the interface the flag package uses for value-less flags.
type boolFlag interface{ IsBoolFlag() bool }

func flagSetKind(fs *flag.FlagSet) func(string) optKind {
	return func(name string) optKind {
		f := fs.Lookup(name)
		if f == nil {
			return optUnknown
		}
		if b, ok := f.Value.(boolFlag); ok && b.IsBoolFlag() {
			return optBool
		}
		return optValue
	}
}

type option struct {
	name     string
	value    string
	hasValue bool
}

// splitArgs separates options from positionals. Strict mode stops at the
// first unknown option or missing value with a usage error (or
// flag.ErrHelp for an undefined -h/--help); lenient mode skips unknown
// options without consuming a value and ignores a missing value.
func splitArgs(args []string, kind func(string) optKind, lenient bool) ([]option, []string, error) {
	var opts []option
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name := a[1:]
		if name[0] == '-' {
			name = name[1:]
		}
		value, hasValue := "", false
		if eq := strings.IndexByte(name, '='); eq >= 0 {
			name, value, hasValue = name[:eq], name[eq+1:], true
		}
		k := optUnknown
		if name != "" && name[0] != '-' {
			k = kind(name)
		}
		switch k {
		case optUnknown:
			if lenient {
				continue
			}
			if name == "h" || name == "help" {
				return nil, nil, flag.ErrHelp
			}
			shown := a
			if eq := strings.IndexByte(a, '='); eq >= 0 {
				shown = a[:eq]
			}
			return nil, nil, usageErrorf("unknown option '%s'", shown)
		case optValue:
			if !hasValue {
				if i+1 >= len(args) {
					if lenient {
						continue
					}
					return nil, nil, usageErrorf("option '--%s' argument missing", name)
				}
				i++
				value, hasValue = args[i], true
			}
		}
		opts = append(opts, option{name: name, value: value, hasValue: hasValue})
	}
	return opts, pos, nil
}
