package report

import (
	"fmt"
	"strings"

	"github.com/perfbisect/perfbisect/bisect"
)

// layoutsOf says in which code layouts runs measured their servers (the
// bisect.FactLayout facts): "a new one every run (...)" when each run had a
// layout of its own, "K per build, in turn (...)" for kept layouts, both
// when the runs mixed them; "" when every run measured its build's own
// binary.
func layoutsOf(runs []bisect.Run) string {
	perRun, kept := 0, 0
	for _, r := range runs {
		l := r.Facts[bisect.FactLayout]
		var i, k int
		switch {
		case strings.HasPrefix(l, "seed "):
			perRun++
		case l != "":
			if _, err := fmt.Sscanf(l, "%d of %d", &i, &k); err == nil && k > kept {
				kept = k
			}
		}
	}
	var parts []string
	if perRun > 0 {
		parts = append(parts, fmt.Sprintf("a new one every run (%d of %d runs: the server relinked by ld.lld with its code sections shuffled; the seed is each run's fact %q)", perRun, len(runs), bisect.FactLayout))
	}
	if kept > 0 {
		parts = append(parts, fmt.Sprintf("%d per build, in turn (the server linked %d times by ld.lld with its code sections shuffled)", kept, kept))
	}
	return strings.Join(parts, "; ")
}
