package main

import "testing"

// The exit protocol of git bisect run: only 0, 1 and 125 label a commit;
// anything else must stop git (>= 128), a Go panic's exit 2 included.
func TestRunWrapperMapsExitCodes(t *testing.T) {
	for _, c := range []struct {
		script string
		want   int
	}{
		{"exit 0", runGood},
		{"exit 1", runBad},
		{"exit 125", runSkip},
		{"exit 2", runUsage}, // what a Go panic exits with
		{"exit 3", runUsage},
		{"exit 124", runUsage},
		{"exit 129", 129},
		{"kill -9 $$", 128 + 9},
		{"kill -SEGV $$", 128 + 11},
	} {
		if got := wrapRun("/bin/sh", []string{"-c", c.script}); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.script, got, c.want)
		}
	}
}

func TestRunWrapperIsOnlyForRun(t *testing.T) {
	if _, wrapped := runWrapper([]string{"perfbisect", "start"}); wrapped {
		t.Error("start was wrapped")
	}
	t.Setenv(runChildEnv, "1")
	if _, wrapped := runWrapper([]string{"perfbisect", "run"}); wrapped {
		t.Error("the child wrapped itself again")
	}
}
