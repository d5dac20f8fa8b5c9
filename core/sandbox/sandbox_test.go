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
		s := fixed(Config{Setting: tc.setting, Network: true}, probed{level: tc.level, why: []string{"because"}})
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
	s := fixed(Config{Setting: Required}, probed{level: Full})
	if c, err := s.Plan(Scope{Workspace: "/ws", Unconfined: true}); err != nil || c.Contained {
		t.Fatalf("mode full runs unconfined: %+v %v", c, err)
	}
	if c, _ := s.Plan(Scope{Workspace: "/ws", ReadOnly: true}); !strings.Contains(c.Policy, `"readOnly":true`) || strings.Contains(c.Policy, "/ws") {
		t.Fatalf("read-only: %s", c.Policy)
	}
}

func TestNoticeAndFallback(t *testing.T) {
	s := fixed(Config{Setting: Auto}, probed{level: Full, abi: 7})
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
	r := fixed(Config{Setting: Required}, probed{level: Full})
	c, _ = r.Plan(Scope{Workspace: "/ws"})
	if _, ok := r.Fallback(c, errors.New("no")); ok {
		t.Fatal("required must not fall back")
	}
	if _, err := ParseSetting("maybe"); err == nil {
		t.Fatal("bad setting accepted")
	}
}

// TestPlanUserNamespace: where the probe found user namespaces (a user
// without CAP_SYS_ADMIN), dsh starts the reaper plainly and the policy
// tells it to enter the namespaces itself; there is no fallback to take.
func TestPlanUserNamespace(t *testing.T) {
	s := fixed(Config{Setting: Required, Network: false}, probed{level: Full, abi: 7, userns: true})
	c, err := s.Plan(Scope{Workspace: "/ws"})
	if err != nil || !c.Contained || c.Cloneflags != 0 || c.fallback != nil {
		t.Fatalf("%+v %v", c, err)
	}
	p, err := ParsePolicy(c.Policy)
	if err != nil || !p.Enter || p.Namespaces || p.Network {
		t.Fatalf("policy %+v %v", p, err)
	}
	if _, ok := s.Fallback(c, errors.New("no")); ok {
		t.Fatal("nothing to fall back from")
	}
}

// TestNoticeSaysWhatLandlockLeaves: the notice names what Landlock alone
// does not contain, by the kernel's ABI and the network setting.
func TestNoticeSaysWhatLandlockLeaves(t *testing.T) {
	for _, tc := range []struct {
		abi     int
		network bool
		want    []string
		not     []string
	}{
		{5, true, []string{"EPERM", "dsh's process stays visible", "can signal dsh", "/tmp is shared", "run anyway"}, []string{"network"}},
		{7, false, nil, []string{"signal", "network"}},
		{3, false, nil, []string{"network"}},
	} {
		s := fixed(Config{Setting: Auto, Network: tc.network}, probed{level: LandlockOnly, abi: tc.abi, why: []string{"user namespaces are refused here: EPERM"}})
		n := s.Notice()
		for _, w := range tc.want {
			if !strings.Contains(n, w) {
				t.Errorf("ABI %d: notice lacks %q: %q", tc.abi, w, n)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(n, w) {
				t.Errorf("ABI %d: notice has %q: %q", tc.abi, w, n)
			}
		}
	}
}

// fixed is a sandbox whose probe found pr.
func fixed(cfg Config, pr probed) *Sandbox {
	s := &Sandbox{cfg: cfg, pr: pr, ready: make(chan struct{})}
	close(s.ready)
	return s
}
