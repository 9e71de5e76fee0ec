package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/perfbisect/perfbisect/bisect"
)

// layoutsOf says in which code layouts runs measured their servers, from
// their bisect.FactLayout: "a new one every run (...)", "16 per build, in
// turn (...)", or for runs of more than one kind how many runs each
// ("a new one in each of 5 runs, one of 16 kept per build in 3 runs, the
// server's own binary in 2 runs"); "" when every run measured its server's
// own binary (no --layouts, an installed server, a release tarball).
func layoutsOf(runs []bisect.Run) string {
	perRun, kept, own, k := 0, 0, 0, 0
	for _, r := range runs {
		switch per, _, _, n, ok := bisect.ParseLayout(r.Facts[bisect.FactLayout]); {
		case ok && per:
			perRun++
		case ok:
			kept, k = kept+1, max(k, n)
		default:
			own++
		}
	}
	switch {
	case perRun == len(runs) && perRun > 0:
		return fmt.Sprintf("a new one every run (the server relinked by ld.lld with its code sections shuffled; each run's seed is its fact %q)", bisect.FactLayout)
	case kept == len(runs) && kept > 0:
		return fmt.Sprintf("%d per build, in turn (the server linked %d times by ld.lld with its code sections shuffled; each run's is its fact %q)", k, k, bisect.FactLayout)
	case perRun == 0 && kept == 0:
		return ""
	}
	var parts []string
	if perRun > 0 {
		parts = append(parts, fmt.Sprintf("a new one in each of %s", runsText(perRun)))
	}
	if kept > 0 {
		parts = append(parts, fmt.Sprintf("one of %d kept per build in %s", k, runsText(kept)))
	}
	if own > 0 {
		parts = append(parts, fmt.Sprintf("the server's own binary in %s", runsText(own)))
	}
	return strings.Join(parts, ", ")
}

// sidesLayouts says the code layouts of a comparison's runs: one text when
// both sides measured alike, else each side's ("base: the server's own
// binary; head: a new one every run (...)"), since a side whose layout is
// fixed carries that layout's level into the difference; "" when neither
// used layouts. A side without runs (the comparison stopped) says nothing.
func sidesLayouts(base, head []bisect.Run) string {
	if len(base) == 0 || len(head) == 0 { // a side not measured (an error): the other's alone
		return layoutsOf(append(slices.Clip(base), head...))
	}
	b, h := layoutsOf(base), layoutsOf(head)
	if b == h {
		return b
	}
	side := func(s string) string {
		if s == "" {
			return "the server's own binary (one layout: its level is part of the difference)"
		}
		return s
	}
	return "base: " + side(b) + "; head: " + side(h)
}
