package app

import "testing"

// The command that explains a named culprit keeps the measurement flags of
// the command as typed and drops what chooses revisions, decisions and
// reports.
func TestExplainCommandLine(t *testing.T) {
	for _, c := range []struct {
		args       []string
		base, head string
		threads    int
		want       string
	}{
		{[]string{"start", "--good", "v1", "--bad=v2", "--repo", "/src/my tree", "--my-cnf", "b.cnf", "--threads", "4", "--first-parent",
			"--json", "r.json", "--time", "5", "--quiet", "--threshold", "3"}, "0123456789", "abcdefabcd", 0,
			"perfbisect explain 0123456789 abcdefabcd --repo '/src/my tree' --my-cnf b.cnf --threads 4 --time 5 --quiet"},
		{[]string{"compare", "HEAD~1", "HEAD", "/usr", "--thread-list", "1,8", "--workload", "oltp_point_select", "--format", "junit", "--no-explain"},
			"HEAD~1", "/usr", 8, "perfbisect explain HEAD~1 /usr --workload oltp_point_select --threads 8"},
		// start's --explain-runs is explain's --runs.
		{[]string{"start", "--good", "a", "--bad", "b", "--explain-runs", "5", "--time=3"}, "a", "b", 0, "perfbisect explain a b --runs 5 --time=3"},
		{[]string{"start", "--explain-runs=4", "--good", "a"}, "a", "b", 0, "perfbisect explain a b --runs=4"},
	} {
		if got := explainCommandLine(c.args, c.base, c.head, c.threads); got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.args, got, c.want)
		}
	}
}

// How much of a fall the pinned settings take away: all of it when a
// quarter of the fall at most remains and the interval excludes half of
// it; none when three quarters remain and the interval excludes half of
// it taken away; part when the interval excludes no change and the whole
// fall; otherwise the runs do not tell (a wide interval, or a head that
// is not slower in them).
func TestPinnedVerdict(t *testing.T) {
	for _, c := range []struct {
		change, lo, hi, head float64
		want                 string
	}{
		{-0.01, -0.04, 0.02, -0.20, "all"},
		{-0.04, -0.06, -0.02, -0.20, "all"},      // 20% of the fall remains
		{-0.03, -0.40, 0.10, -0.20, "undecided"}, // the interval reaches past the whole fall
		{-0.10, -0.13, -0.07, -0.20, "part"},     // half
		{-0.18, -0.22, -0.15, -0.20, "none"},     // 90% remains
		{-0.25, -0.30, -0.20, -0.20, "none"},     // more than all of it
		{-0.18, -0.30, 0.05, -0.20, "undecided"}, // 90%, but the interval holds no change
		{-0.01, -0.03, 0.02, 0.01, "undecided"},  // the head is not slower in these runs
	} {
		if got := pinnedVerdict(c.change, c.lo, c.hi, c.head); got != c.want {
			t.Errorf("pinned %+.0f%% [%+.0f%%, %+.0f%%] of a %+.0f%% fall: %s, want %s", 100*c.change, 100*c.lo, 100*c.hi, 100*c.head, got, c.want)
		}
	}
}
