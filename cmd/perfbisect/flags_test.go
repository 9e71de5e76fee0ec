package main

import (
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/internal/cliflag"
)

func TestSimulateCommand(t *testing.T) {
	if code := run([]string{"perfbisect", "simulate", "--sessions", "20", "--quiet-not-a-flag"}); code != exitUsage {
		t.Errorf("unknown flag: exit %d, want %d", code, exitUsage)
	}
	if code := run([]string{"perfbisect", "simulate", "--sessions", "20", "--culprit-pos", "41"}); code != exitUsage {
		t.Errorf("culprit beyond the history: exit %d, want %d", code, exitUsage)
	}
	if code := run([]string{"perfbisect", "simulate", "--sessions", "20"}); code != exitOK {
		t.Errorf("simulate: exit %d", code)
	}
	// Every bad value is a usage error (NaN passes a plain comparison, and a
	// flag --table does not use must not be silently ignored).
	for _, args := range [][]string{
		{"--flaky", "NaN"}, {"--cv", "Inf"}, {"--change", "-100"}, {"--step-factor", "0"}, {"--sessions", "0"},
		{"--second-pos", "24"}, {"--workers", "0"}, {"--fixed"}, {"--table", "--cv", "3"}, {"--table", "--commits", "5"},
		{"--noise", "cauchy"}, {"--drift", "1"}, {"--layouts", "run"}, {"--layouts", "16"}, {"--build-effect-unknown"},
		{"--table", "--layouts", "16", "--build-effect", "2"}, {"--table", "--layouts", "16"},
	} {
		if code := run(append([]string{"perfbisect", "simulate", "--sessions", "5"}, args...)); code != exitUsage {
			t.Errorf("simulate %v: exit %d, want %d", args, code, exitUsage)
		}
	}
	// Layouts with the per-build level they are about.
	if code := run([]string{"perfbisect", "simulate", "--sessions", "5", "--build-effect", "2", "--layouts", "run", "--build-effect-unknown"}); code != exitOK {
		t.Errorf("simulate --build-effect 2 --layouts run: exit %d", code)
	}
}

func TestFlagsFirst(t *testing.T) {
	app := newApp()
	got := cliflag.FlagsFirst(app, []string{"perfbisect", "compare", "origin/main", "HEAD", "--format", "markdown", "--quiet", "--threshold=3", "--repo", "/x"}, positionalCommands)
	want := []string{"perfbisect", "compare", "--format", "markdown", "--quiet", "--threshold=3", "--repo", "/x", "--", "origin/main", "HEAD"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	got = cliflag.FlagsFirst(app, []string{"perfbisect", "scan", "--runs", "3", "a..b", "--merges", "--", "-odd-ref"}, positionalCommands)
	want = []string{"perfbisect", "scan", "--runs", "3", "--merges", "--", "a..b", "-odd-ref"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// A value flag left without its value stays last, for the parser to say so.
	got = cliflag.FlagsFirst(app, []string{"perfbisect", "compare", "a", "b", "--state-dir"}, positionalCommands)
	if strings.Join(got, " ") != "perfbisect compare --state-dir" {
		t.Errorf("trailing value flag: %q", got)
	}
	if code := run([]string{"perfbisect", "compare", "a", "b", "--state-dir"}); code != exitUsage {
		t.Errorf("trailing --state-dir: exit %d", code)
	}
	got = cliflag.FlagsFirst(app, []string{"perfbisect", "report", "1", "--format", "junit"}, positionalCommands)
	if strings.Join(got, " ") != "perfbisect report --format junit -- 1" {
		t.Errorf("report: %q", got)
	}
	// Help after arguments is the command's help, not a help topic.
	if got := cliflag.FlagsFirst(app, []string{"perfbisect", "compare", "a", "b", "--format", "json", "--help"}, positionalCommands); strings.Join(got, " ") != "perfbisect compare --help" {
		t.Errorf("help after arguments: %q", got)
	}
	start := []string{"perfbisect", "start", "--good", "a"}
	if got := cliflag.FlagsFirst(app, start, positionalCommands); strings.Join(got, " ") != strings.Join(start, " ") {
		t.Errorf("start changed: %q", got)
	}
}

// cliflag.Sets on perfbisect's own start command: a flag under its name or
// alias, not another flag's value that looks like it, nothing after "--".
func TestStoredCommandSetsFlag(t *testing.T) {
	app := newApp()
	for _, c := range []struct {
		args []string
		flag string
		want bool
	}{
		{[]string{"perfbisect", "start", "--repo", "q", "-q", "--threshold=5"}, "quiet", true},
		{[]string{"perfbisect", "start", "--quiet"}, "quiet", true},
		{[]string{"perfbisect", "start", "--threshold=5", "--no-explain"}, "no-explain", true},
		{[]string{"perfbisect", "start", "--repo", "q"}, "quiet", false},
		{[]string{"perfbisect", "start", "--workload-options", "-q"}, "quiet", false},
		{[]string{"perfbisect", "start", "--", "--quiet"}, "quiet", false},
	} {
		if got := cliflag.Sets(app, c.args, c.flag); got != c.want {
			t.Errorf("Sets(%q, %s) = %v, want %v", c.args, c.flag, got, c.want)
		}
	}
}
