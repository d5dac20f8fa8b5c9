package sandbox

import (
	"errors"
	"strings"
	"testing"
)

func TestPlanBySettingAndLevel(t *testing.T) {
	sc := Scope{Workspace: "/ws"}
	for _, tc := range []struct {
		setting   Setting
		level     Level
		contained bool
		ns        bool
		err       bool
	}{
		{Off, Full, false, false, false},
		{Auto, Full, true, true, false},
		{Auto, LandlockOnly, true, false, false},
		{Auto, None, false, false, false},
		{Required, Full, true, true, false},
		{Required, LandlockOnly, false, false, true},
		{Required, None, false, false, true},
	} {
		s := &Sandbox{cfg: Config{Setting: tc.setting, Network: true}, level: tc.level, why: []string{"because"}}
		c, err := s.Plan(sc)
		if (err != nil) != tc.err || (err != nil && !errors.Is(err, ErrCannotContain)) {
			t.Errorf("%s/%d: err %v", tc.setting, tc.level, err)
		}
		if c.Contained != tc.contained || (c.Cloneflags != 0) != tc.ns {
			t.Errorf("%s/%d: %+v", tc.setting, tc.level, c)
		}
		if tc.contained {
			p, err := ParsePolicy(c.Policy)
			if err != nil || p.Namespaces != tc.ns || len(p.Writable) != 1 || p.Writable[0] != "/ws" {
				t.Errorf("%s/%d: policy %+v %v", tc.setting, tc.level, p, err)
			}
		}
	}
	s := &Sandbox{cfg: Config{Setting: Required}, level: Full}
	if c, err := s.Plan(Scope{Workspace: "/ws", Unconfined: true}); err != nil || c.Contained {
		t.Fatalf("mode full runs unconfined: %+v %v", c, err)
	}
	if c, _ := s.Plan(Scope{Workspace: "/ws", ReadOnly: true}); !strings.Contains(c.Policy, `"readOnly":true`) || strings.Contains(c.Policy, "/ws") {
		t.Fatalf("read-only: %s", c.Policy)
	}
}

func TestNoticeAndFallback(t *testing.T) {
	s := &Sandbox{cfg: Config{Setting: Auto}, level: Full}
	if n := s.Notice(); n != "" {
		t.Fatalf("full needs no notice: %q", n)
	}
	c, _ := s.Plan(Scope{Workspace: "/ws"})
	fb, ok := s.Fallback(c, errors.New("operation not permitted"))
	if !ok || fb.Cloneflags != 0 || !fb.Contained || s.Level() == Full {
		t.Fatalf("auto falls back to Landlock alone: %+v %v level %d", fb, ok, s.Level())
	}
	if n := s.Notice(); !strings.Contains(n, "operation not permitted") || !strings.Contains(n, "run anyway") {
		t.Fatalf("notice %q", n)
	}
	r := &Sandbox{cfg: Config{Setting: Required}, level: Full}
	c, _ = r.Plan(Scope{Workspace: "/ws"})
	if _, ok := r.Fallback(c, errors.New("no")); ok {
		t.Fatal("required must not fall back")
	}
	if _, err := ParseSetting("maybe"); err == nil {
		t.Fatal("bad setting accepted")
	}
}
