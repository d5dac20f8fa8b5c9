package headless

import (
	"bytes"
	"errors"
	"flag"
	"reflect"
	"testing"
)

// sharedFlagSet stands in for the lead's shared settings flags.
func sharedFlagSet(out *bytes.Buffer) (*flag.FlagSet, *string, *int, *bool) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(out)
	model := fs.String("model", "", "model")
	maxTokens := fs.Int("max-tokens", 0, "max tokens")
	verbose := fs.Bool("verbose", false, "a shared bool flag")
	return fs, model, maxTokens, verbose
}

func TestParseRunFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    RunFlags
		pos     []string
		model   string
		maxTok  int
		verbose bool
		usage   string // expected usage error message
		help    bool
	}{
		{name: "none", args: nil, pos: []string{}},
		{name: "jsonAndTask", args: []string{"--json", "run", "tests"}, want: RunFlags{JSON: true}, pos: []string{"run", "tests"}},
		{name: "interspersed", args: []string{"run", "--json", "tests", "--model", "m1"}, want: RunFlags{JSON: true}, pos: []string{"run", "tests"}, model: "m1"},
		{name: "singleDash", args: []string{"-json", "-session-id", "abc", "t"}, want: RunFlags{JSON: true, SessionID: "abc", SessionIDSet: true}, pos: []string{"t"}},
		{name: "sessionIDEquals", args: []string{"--session-id=a=b", "t"}, want: RunFlags{SessionID: "a=b", SessionIDSet: true}, pos: []string{"t"}},
		{name: "sessionIDVerbatim", args: []string{"--session-id", " s-1 ", "t"}, want: RunFlags{SessionID: " s-1 ", SessionIDSet: true}, pos: []string{"t"}},
		{name: "jsonAsSessionIDValue", args: []string{"--session-id", "--json", "t"}, want: RunFlags{SessionID: "--json", SessionIDSet: true}, pos: []string{"t"}},
		{name: "jsonAsModelValue", args: []string{"--model", "--json"}, pos: []string{}, model: "--json"},
		{name: "jsonAfterDoubleDash", args: []string{"--", "--json", "x"}, pos: []string{"--json", "x"}},
		{name: "dashPositional", args: []string{"--json", "-"}, want: RunFlags{JSON: true}, pos: []string{"-"}},
		{name: "jsonFalse", args: []string{"--json=false", "t"}, pos: []string{"t"}},
		{name: "repeatedSessionIDLastWins", args: []string{"--session-id", "a", "--session-id", "b"}, want: RunFlags{SessionID: "b", SessionIDSet: true}, pos: []string{}},
		{name: "sharedValues", args: []string{"--max-tokens=5", "--verbose", "--json"}, want: RunFlags{JSON: true}, pos: []string{}, maxTok: 5, verbose: true},
		{name: "imagesRepeat", args: []string{"--image", "a.png", "look", "--image=b.jpg", "-image", "--json"}, want: RunFlags{Images: []string{"a.png", "b.jpg", "--json"}}, pos: []string{"look"}},
		{name: "sharedBoolDoesNotEatJSON", args: []string{"--verbose", "--json"}, want: RunFlags{JSON: true}, pos: []string{}, verbose: true},

		{name: "unknown", args: []string{"--json", "--bogus"}, want: RunFlags{JSON: true}, usage: "unknown option '--bogus'"},
		{name: "unknownWithValue", args: []string{"--bogus=1", "t"}, usage: "unknown option '--bogus'"},
		{name: "unknownShort", args: []string{"-x"}, usage: "unknown option '-x'"},
		{name: "tripleDash", args: []string{"---json"}, usage: "unknown option '---json'"},
		{name: "negativeNumber", args: []string{"-5"}, usage: "unknown option '-5'"},
		{name: "missingSessionID", args: []string{"--json", "--session-id"}, want: RunFlags{JSON: true}, usage: "option '--session-id' argument missing"},
		{name: "missingImage", args: []string{"t", "--json", "--image"}, want: RunFlags{JSON: true}, usage: "option '--image' argument missing"},
		{name: "blankImage", args: []string{"--image", "", "t"}, usage: "option '--image <path>' must not be blank"},
		{name: "blankSessionID", args: []string{"--session-id", "  ", "--json"}, want: RunFlags{JSON: true}, usage: "option '--session-id <id>' must not be blank"},
		{name: "emptySessionIDEquals", args: []string{"--session-id="}, usage: "option '--session-id <id>' must not be blank"},
		{name: "badBool", args: []string{"--json=maybe"}, want: RunFlags{JSON: true}, usage: `invalid value "maybe" for option '--json': want true or false`},
		{name: "badInt", args: []string{"--max-tokens", "lots"}, usage: `invalid value "lots" for option '--max-tokens': want a whole number`},
		{name: "help", args: []string{"t", "--help", "--bogus"}, help: true},
		{name: "helpShort", args: []string{"-h"}, help: true},
		{name: "helpAfterDoubleDash", args: []string{"--", "-h"}, pos: []string{"-h"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			fs, model, maxTok, verbose := sharedFlagSet(&out)
			rf, pos, err := ParseRunFlags(fs, tc.args)
			if out.Len() != 0 {
				t.Errorf("printed to the FlagSet output: %q", out.String())
			}
			if tc.help {
				if !errors.Is(err, flag.ErrHelp) {
					t.Fatalf("got %v, want flag.ErrHelp", err)
				}
				return
			}
			if tc.usage != "" {
				var ue *UsageError
				if !errors.As(err, &ue) || ue.Error() != tc.usage {
					t.Fatalf("got %v, want usage error %q", err, tc.usage)
				}
				if rf.JSON != tc.want.JSON {
					t.Errorf("JSON on error = %v, want %v", rf.JSON, tc.want.JSON)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rf, tc.want) || !reflect.DeepEqual(pos, tc.pos) {
				t.Errorf("got %+v %q, want %+v %q", rf, pos, tc.want, tc.pos)
			}
			if *model != tc.model || *maxTok != tc.maxTok || *verbose != tc.verbose {
				t.Errorf("shared flags model=%q max=%d verbose=%v", *model, *maxTok, *verbose)
			}
		})
	}
}

func TestRunFlagsContinueAndQuiet(t *testing.T) {
	var out bytes.Buffer
	fs, _, _, _ := sharedFlagSet(&out)
	rf, pos, err := ParseRunFlags(fs, []string{"-c", "more", "--quiet"})
	if err != nil || !rf.Continue || !rf.Quiet || !reflect.DeepEqual(pos, []string{"more"}) {
		t.Fatalf("got %+v %q %v", rf, pos, err)
	}
	fs, _, _, _ = sharedFlagSet(&out)
	_, _, err = ParseRunFlags(fs, []string{"--continue", "--session-id", "s", "t"})
	var ue *UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("--continue with --session-id: got %v, want a usage error", err)
	}
}

func TestParseRunFlagsNeedsContinueOnError(t *testing.T) {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	if _, _, err := ParseRunFlags(fs, []string{"--bogus"}); err == nil {
		t.Fatal("ExitOnError FlagSet accepted")
	}
}

func TestJSONRequested(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--json"}, true},
		{[]string{"-json", "task"}, true},
		{[]string{"task", "--json"}, true},
		{[]string{"--json=true"}, true},
		{[]string{"--json=false"}, false},
		{[]string{"--json", "--json=0"}, false},
		{[]string{"--json=maybe"}, true},
		{[]string{"--session-id", "--json"}, false},
		{[]string{"--session-id=x", "--json"}, true},
		{[]string{"--model", "--json"}, false},
		{[]string{"--provider", "--json"}, false},
		{[]string{"--", "--json"}, false},
		{[]string{"--bogus", "--json"}, true},
		{[]string{"--json", "--bogus"}, true},
		{[]string{"--session-id"}, false},
		{[]string{"---json"}, false},
	} {
		var out bytes.Buffer
		fs, _, _, _ := sharedFlagSet(&out)
		fs.String("provider", "", "")
		_, _, _ = ParseRunFlags(fs, nil) // registers the run flags
		if got := JSONRequestedIn(fs, tc.args); got != tc.want {
			t.Errorf("JSONRequestedIn(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
	// A shared bool flag takes no value.
	var out bytes.Buffer
	fs, _, _, _ := sharedFlagSet(&out)
	_, _, _ = ParseRunFlags(fs, nil)
	if !JSONRequestedIn(fs, []string{"--verbose", "--json"}) {
		t.Error("bool flag ate --json")
	}
	if JSONRequestedIn(fs, []string{"--max-tokens", "--json"}) {
		t.Error("--json as a value read as the option")
	}
}
