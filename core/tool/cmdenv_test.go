package tool

import (
	"slices"
	"testing"
)

func TestCommandEnvPassesOnlyTheBaseSetAndWhatIsAsked(t *testing.T) {
	in := []string{
		"PATH=/bin", "HOME=/root", "LC_ALL=C", "GOPATH=/go", "CARGO_HOME=/c",
		"PGPASSWORD=p", "DATABASE_URL=postgres://u:p@h/db", "GITHUB_PAT=g", "SSH_AUTH_SOCK=/s",
		"DEEPSEEK_API_KEY=k", "OPENAI_API_KEY=k2", "AWS_ACCESS_KEY_ID=a", "DSH_CONFIG=/x",
		"HTTPS_PROXY=http://proxy:3128", "HTTP_PROXY=http://u:secret@proxy:3128",
		"MYAPP_MODE=dev", "MYAPP_DEBUG=1", "PGHOST=db", "NOVALUE",
	}
	got := CommandEnv(in, []string{"MYAPP_*", "PGHOST", "OPENAI_API_KEY"})
	want := []string{"PATH=/bin", "HOME=/root", "LC_ALL=C", "GOPATH=/go", "CARGO_HOME=/c",
		"HTTPS_PROXY=http://proxy:3128", "MYAPP_MODE=dev", "MYAPP_DEBUG=1", "PGHOST=db"}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
	if got := CommandEnv(in, nil); slices.ContainsFunc(got, func(kv string) bool { return kv == "PGHOST=db" }) {
		t.Fatalf("PGHOST passed without being asked: %v", got)
	}
}

func TestValidCommandEnvEntry(t *testing.T) {
	for _, ok := range []string{"PGHOST", "MYAPP_*", "npm_config_registry", "X*"} {
		if msg := ValidCommandEnvEntry(ok); msg != "" {
			t.Errorf("%q refused: %s", ok, msg)
		}
	}
	for _, bad := range []string{"", "*", "A B", "1X", "A=B", "A-B*"} {
		if ValidCommandEnvEntry(bad) == "" {
			t.Errorf("%q accepted", bad)
		}
	}
}
