package testenv

import "testing"

func TestMissing(t *testing.T) {
	if m := (Need{files: []string{"sh", "no-such-tool-perfbisect|/no/such/path"}}).missing(); m != "no-such-tool-perfbisect" {
		t.Errorf("missing = %q, want the first name of the alternatives not found", m)
	}
	if m := (Need{files: []string{"sh", "/bin/sh|no-such-tool"}}).missing(); m != "" {
		t.Errorf("missing = %q with every executable present", m)
	}
}
