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
	} {
		if got := explainCommandLine(c.args, c.base, c.head, c.threads); got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.args, got, c.want)
		}
	}
}
