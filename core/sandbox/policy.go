package sandbox

import (
	"encoding/json"
	"fmt"
)

// Policy is what the reaper applies to itself before it starts the
// command; the command inherits it.
type Policy struct {
	Writable []string `json:"writable,omitempty"`
	Hidden   []string `json:"hidden,omitempty"`
	Network  bool     `json:"network"`
	ReadOnly bool     `json:"readOnly,omitempty"`
	// Namespaces: the reaper runs in fresh PID and mount namespaces (and a
	// network namespace when Network is false), so it mounts /proc, a
	// private /tmp and the hiding mounts.
	Namespaces bool `json:"namespaces,omitempty"`
}

func (p Policy) command(ns bool) Command {
	p.Namespaces = ns
	b, _ := json.Marshal(p)
	c := Command{Contained: true, Policy: string(b)}
	if ns {
		c.Cloneflags = cloneFlags(!p.Network)
		c.MapUser = needUserNS()
		c.Env = []string{"TMPDIR=/tmp"}
	}
	return c
}

// Setup is the reaper's setup for the binary (proc.ReaperMain): it
// decodes the policy and applies it to the reaper, which the command then
// inherits.
func Setup(policy string) error {
	p, err := ParsePolicy(policy)
	if err != nil {
		return err
	}
	return Apply(p)
}

// ParsePolicy decodes the reaper flag's value.
func ParsePolicy(s string) (Policy, error) {
	var p Policy
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return p, fmt.Errorf("sandbox policy: %w", err)
	}
	return p, nil
}
