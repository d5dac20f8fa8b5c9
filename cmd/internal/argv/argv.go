// Package argv parses dsh's command lines in one grammar for every command,
// the one the original's commander-based CLI taught its users: options and
// positionals may be interleaved (so a flag works before or after a
// subcommand word), `--` ends options, a lone `-` is a positional, an option
// that takes a value takes the next argument whatever it looks like, and
// `-name`, `--name` and `--name=value` are all accepted.
//
// It sits on top of the standard flag package: a FlagSet defines the options
// and their types; argv only decides which argument is an option, then hands
// the options to the FlagSet in its own canonical form.
package argv

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// UsageError is a command-line mistake: the command exits 2 with its message.
type UsageError struct {
	Msg string
	Err error
}

func (e *UsageError) Error() string { return e.Msg }
func (e *UsageError) Unwrap() error { return e.Err }

// Errorf builds a UsageError.
func Errorf(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// Kind says whether an option name is unknown, a switch, or takes a value.
type Kind int

// The kinds of option.
const (
	Unknown Kind = iota
	Bool
	Value
)

// KindOf returns the kind function of fs: what each of its flags is.
func KindOf(fs *flag.FlagSet) func(string) Kind {
	return func(name string) Kind {
		f := fs.Lookup(name)
		if f == nil {
			return Unknown
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			return Bool
		}
		return Value
	}
}

// Option is one option as written on the command line.
type Option struct {
	Name     string
	Value    string
	HasValue bool
}

// Split separates options from positionals. Strict mode stops at the first
// unknown option or missing value with a *UsageError (flag.ErrHelp for an
// undefined -h/--help); lenient mode skips unknown options without consuming
// a value and ignores a missing value.
func Split(args []string, kind func(string) Kind, lenient bool) ([]Option, []string, error) {
	var opts []Option
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
		name := strings.TrimPrefix(a[1:], "-")
		value, hasValue := "", false
		if eq := strings.IndexByte(name, '='); eq >= 0 {
			name, value, hasValue = name[:eq], name[eq+1:], true
		}
		k := Unknown
		if name != "" && name[0] != '-' {
			k = kind(name)
		}
		switch k {
		case Unknown:
			if lenient {
				continue
			}
			if name == "h" || name == "help" {
				return nil, nil, flag.ErrHelp
			}
			shown, _, _ := strings.Cut(a, "=")
			return nil, nil, Errorf("unknown option '%s'", shown)
		case Value:
			if !hasValue {
				if i+1 >= len(args) {
					if lenient {
						continue
					}
					return nil, nil, Errorf("option '--%s' argument missing", name)
				}
				i++
				value, hasValue = args[i], true
			}
		}
		opts = append(opts, Option{Name: name, Value: value, HasValue: hasValue})
	}
	return opts, pos, nil
}

// Parse parses args into fs in this package's grammar and returns the
// positionals. -h/--help (when fs does not define them) returns
// flag.ErrHelp; every other failure is a *UsageError in one style
// ("unknown option '--bogus'", "invalid value \"x\" for option '--step-cap'").
// fs must use flag.ContinueOnError; Parse never prints.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	if fs.ErrorHandling() != flag.ContinueOnError {
		return nil, errors.New("argv: Parse needs a flag.ContinueOnError FlagSet")
	}
	opts, pos, err := Split(args, KindOf(fs), false)
	if err != nil {
		return nil, err
	}
	out := fs.Output()
	fs.SetOutput(io.Discard)
	defer fs.SetOutput(out)
	for _, o := range opts {
		if err := set(fs, o); err != nil {
			return nil, err
		}
	}
	if pos == nil {
		pos = []string{}
	}
	return pos, nil
}

// set applies one option, phrasing a bad value as a usage error.
func set(fs *flag.FlagSet, o Option) error {
	f := fs.Lookup(o.Name)
	if f == nil { // defined as a kind but not on fs: cannot happen with KindOf
		return Errorf("unknown option '--%s'", o.Name)
	}
	v := o.Value
	if !o.HasValue {
		v = "true"
	}
	if err := fs.Set(o.Name, v); err != nil {
		return &UsageError{Msg: fmt.Sprintf("invalid value %q for option '--%s': %s", o.Value, o.Name, want(f, err)), Err: err}
	}
	return nil
}

// want says in words what a flag takes, for a bad value.
func want(f *flag.Flag, err error) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return err.Error()
	}
	switch g.Get().(type) {
	case bool:
		return "want true or false"
	case int, int64, uint, uint64:
		return "want a whole number"
	case float64:
		return "want a number"
	case time.Duration:
		return "want a duration such as 30s or 5m"
	}
	return err.Error()
}
