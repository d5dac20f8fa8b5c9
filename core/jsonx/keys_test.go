package jsonx

import (
	"slices"
	"testing"
)

func TestKeys(t *testing.T) {
	type entry struct {
		Command string `json:"command,omitempty"`
		Args    []string
		Skip    int `json:"-"`
		hidden  int
		Timeout *float64 `json:"timeout"`
	}
	_ = entry{}.hidden
	if got, want := Keys(entry{}), []string{"command", "Args", "timeout"}; !slices.Equal(got, want) {
		t.Errorf("Keys = %v, want %v", got, want)
	}
}
