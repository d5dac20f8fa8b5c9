package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestTrustCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"model": "deepseek-pro"}`), 0o640); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(dir, "proj")
	if err := os.MkdirAll(filepath.Join(proj, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := trustCommand(append([]string{"--config", cfg}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, out, _ := run(proj); code != 0 || !strings.Contains(out, "trusted: "+proj) {
		t.Fatalf("trust: %d %q", code, out)
	}
	if code, out, _ := run(filepath.Join(proj, "sub")); code != 0 || !strings.Contains(out, "under a trusted folder") {
		t.Fatalf("sub-folder: %d %q", code, out)
	}
	data, _ := os.ReadFile(cfg)
	var got struct {
		Model           string   `json:"model"`
		TrustedProjects []string `json:"trustedProjects"`
	}
	if err := json.Unmarshal(data, &got); err != nil || got.Model != "deepseek-pro" || !slices.Equal(got.TrustedProjects, []string{proj}) {
		t.Fatalf("config file now %s (%v)", data, err)
	}
	if st, _ := os.Stat(cfg); st.Mode().Perm() != 0o640 {
		t.Errorf("mode changed to %v", st.Mode().Perm())
	}
	if code, out, _ := run("--list"); code != 0 || out != proj+"\n" {
		t.Errorf("list: %q", out)
	}
	if code, _, _ := run("--revoke", proj); code != 0 {
		t.Fatal("revoke")
	}
	if code, _, errs := run("--revoke", proj); code != 1 || !strings.Contains(errs, "not in trustedProjects") {
		t.Errorf("second revoke: %d %q", code, errs)
	}
	if code, _, errs := run(filepath.Join(dir, "missing")); code != 1 || !strings.Contains(errs, "no such file") {
		t.Errorf("missing folder: %d %q", code, errs)
	}
	// A config file dsh would refuse is not written into.
	os.WriteFile(cfg, []byte(`{"modle": "x"}`), 0o600)
	if code, _, errs := run(proj); code != 1 || !strings.Contains(errs, "modle") {
		t.Errorf("bad config: %d %q", code, errs)
	}
}
