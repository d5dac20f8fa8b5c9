package lazyre

import "testing"

func TestNewCompilesOnceOnFirstUse(t *testing.T) {
	re := New(`^a+$`)
	first := re()
	if !first.MatchString("aaa") || first.MatchString("ab") {
		t.Fatal("the pattern does not match as written")
	}
	if re() != first {
		t.Fatal("compiled again on the second call")
	}
}

func TestNewPanicsOnABadPatternAtFirstUse(t *testing.T) {
	re := New(`(`) // no panic here: nothing is compiled yet
	defer func() {
		if recover() == nil {
			t.Fatal("a bad pattern did not panic")
		}
	}()
	re()
}
