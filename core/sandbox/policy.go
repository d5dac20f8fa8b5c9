package sandbox

import (
	"encoding/json"
	"fmt"

	"github.com/dsh-dev/dsh/core/proc"
)

// Policy is what the reaper applies to itself before it starts the
// command; the command inherits it.
type Policy struct {
	Writable []string `json:"writable,omitempty"`
	Hidden   []string `json:"hidden,omitempty"`
	Network  bool     `json:"network"`
	ReadOnly bool     `json:"readOnly,omitempty"`
	// Tmp is the host folder shown as the command's /tmp in the mount
	// namespace (the session's, shared by its commands and jobs); "" is a
	// fresh tmpfs for the one command.
	Tmp string `json:"tmp,omitempty"`
	// Namespaces: the reaper runs in fresh PID and mount namespaces (and a
	// network namespace when Network is false), so it mounts /proc, a
	// private /tmp and the hiding mounts.
	Namespaces bool `json:"namespaces,omitempty"`
	// Enter: the reaper is not in the namespaces (a user without
	// CAP_SYS_ADMIN, who cannot make them from dsh): it starts a second
	// reaper in new user, PID and mount namespaces, which applies the
	// policy with Namespaces.
	Enter bool `json:"enter,omitempty"`
}

func (p Policy) encode() string {
	b, _ := json.Marshal(p)
	return string(b)
}

// command is how dsh starts the reaper for p: in the namespaces (root),
// or entering them in the reaper (user namespaces), or neither.
func (p Policy) command(how nsHow) Command {
	p.Namespaces, p.Enter = how == nsByDsh, how == nsByReaper
	c := Command{Contained: true, Policy: p.encode()}
	if how == nsByDsh {
		c.Cloneflags = cloneFlags(!p.Network, false)
	}
	if how != nsNone {
		c.Env = []string{"TMPDIR=/tmp"}
	}
	return c
}

// nsHow is who makes a contained command's namespaces.
type nsHow int

const (
	nsNone     nsHow = iota // Landlock alone
	nsByDsh                 // root: dsh starts the reaper in them
	nsByReaper              // user namespaces: the reaper starts a second one in them
)

// Setup is the reaper's setup for the binary (proc.ReaperMain): it
// decodes the policy and applies it to the reaper, which the command then
// inherits — or, for Policy.Enter, says how to start the second reaper
// that applies it inside new namespaces.
func Setup(policy string, argv []string) (proc.ReaperStart, error) {
	p, err := ParsePolicy(policy)
	if err != nil {
		return proc.ReaperStart{}, err
	}
	if p.Enter {
		return enter(p, argv)
	}
	return proc.ReaperStart{}, Apply(p)
}

// ParsePolicy decodes the reaper flag's value.
func ParsePolicy(s string) (Policy, error) {
	var p Policy
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return p, fmt.Errorf("sandbox policy: %w", err)
	}
	return p, nil
}
