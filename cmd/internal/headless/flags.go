package headless

import (
	"flag"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-dev/dsh/cmd/internal/argv"
)

// RunFlags are the options specific to `dsh run`. The shared settings flags
// (--provider, --model, …) are registered by the caller on the same FlagSet.
type RunFlags struct {
	// JSON selects the NDJSON run-event stream on stdout.
	JSON bool
	// SessionID is the session to adopt (or a unique prefix of its id),
	// verbatim (whitespace included); meaningful only when SessionIDSet.
	SessionID    string
	SessionIDSet bool
	// Continue resumes the most recent session of this cwd.
	Continue bool
	// Images are the --image paths in the order given; LoadImages reads
	// and checks them.
	Images []string
	// Quiet keeps the default mode's stderr to reasoning and errors: no
	// progress view.
	Quiet bool
}

// Flag names.
const (
	FlagJSON      = "json"
	FlagSessionID = "session-id"
	FlagContinue  = "continue"
	FlagQuiet     = "quiet"
	FlagImage     = "image"
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

// imagesValue collects repeated --image options.
type imagesValue struct{ f *RunFlags }

func (v imagesValue) String() string {
	if v.f == nil {
		return ""
	}
	return strings.Join(v.f.Images, ",")
}

func (v imagesValue) Set(s string) error {
	v.f.Images = append(v.f.Images, s)
	return nil
}

// ParseRunFlags registers the run flags on fs, parses args in the grammar of
// package argv and returns the run flags and the positionals (the task words).
// -h/--help, unless fs defines them, returns flag.ErrHelp; every other failure
// is a *UsageError whose message has no "error: " prefix, e.g.
// "unknown option '--bogus'".
//
// Even when it fails, the returned RunFlags.JSON says whether the command
// line asked for --json, so the caller can report the usage error as an
// `error` event. Call it once per FlagSet.
func ParseRunFlags(fs *flag.FlagSet, args []string) (RunFlags, []string, error) {
	var rf RunFlags
	fs.BoolVar(&rf.JSON, FlagJSON, false, "write newline-delimited JSON run events to stdout")
	fs.Var(sessionIDValue{&rf}, FlagSessionID, "adopt the stored session with this `id` (or a unique prefix of it)")
	fs.BoolVar(&rf.Continue, FlagContinue, false, "resume the most recent session of this directory (also -c)")
	fs.BoolVar(&rf.Continue, "c", false, "short for --continue")
	fs.Var(imagesValue{&rf}, FlagImage, "attach the image at `path` (PNG, JPEG, GIF or WebP) after the task; repeatable")
	fs.BoolVar(&rf.Quiet, FlagQuiet, false, "no progress view on stderr: only reasoning and errors (also -q)")
	fs.BoolVar(&rf.Quiet, "q", false, "short for --quiet")

	fail := func(err error) (RunFlags, []string, error) {
		rf = RunFlags{JSON: JSONRequestedIn(fs, args)}
		return rf, nil, err
	}
	pos, err := argv.Parse(fs, args)
	if err != nil {
		return fail(err)
	}
	if rf.SessionIDSet && strings.TrimSpace(rf.SessionID) == "" {
		return fail(usageErrorf("option '--%s <id>' must not be blank", FlagSessionID))
	}
	if slices.Contains(rf.Images, "") {
		return fail(usageErrorf("option '--%s <path>' must not be blank", FlagImage))
	}
	if rf.SessionIDSet && rf.Continue {
		return fail(usageErrorf("--%s and --%s name the session twice; give one", FlagSessionID, FlagContinue))
	}
	return rf, pos, nil
}

// JSONRequestedIn reports whether args ask for --json, scanning them as the
// parser would (fs says which options take a value): `--` ends options and
// an option's value is not an option. An unknown option is skipped without
// taking a value, because its usage error should still honour a --json
// given after it.
func JSONRequestedIn(fs *flag.FlagSet, args []string) bool {
	opts, _, _ := argv.Split(args, argv.KindOf(fs), true)
	want := false
	for _, o := range opts {
		if o.Name != FlagJSON {
			continue
		}
		if !o.HasValue {
			want = true
			continue
		}
		b, err := strconv.ParseBool(o.Value)
		// `--json=maybe` is an error, but the caller clearly wanted JSON.
		want = b || err != nil
	}
	return want
}
