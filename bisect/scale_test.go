package bisect

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// BenchmarkHistoryScale: ref and range resolution on a history as long as
// MariaDB's (about 200,000 commits; PERFBISECT_HISTORY_COMMITS overrides),
// generated with git fast-import (a first-parent line with a merged
// two-commit branch every 50 commits): Resolve of a tag, Range of the last
// 1,000 commits by the git command (as Range does when git is installed) and
// by go-git's walk, then by git again after `git commit-graph write`.
//
//	go test -run '^$' -bench HistoryScale -benchtime 1x ./bisect
func BenchmarkHistoryScale(b *testing.B) {
	n := 200000
	if v, err := strconv.Atoi(os.Getenv("PERFBISECT_HISTORY_COMMITS")); err == nil && v > 2000 {
		n = v
	}
	dir := b.TempDir()
	if d := os.Getenv("PERFBISECT_HISTORY_DIR"); d != "" {
		dir = d
	}
	runGit(b, dir, nil, nil, "init", "-q", "-b", "main")
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = dir
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(in, 1<<20)
	mark, main := 0, 0
	commit := func(branch string, from int, merge int) int {
		mark++
		t := 1600000000 + mark*60
		fmt.Fprintf(w, "commit refs/heads/%s\nmark :%d\nauthor t <t@example.com> %d +0000\ncommitter t <t@example.com> %d +0000\ndata 12\ncommit %5d\n", branch, mark, t, t, mark%100000)
		if from > 0 {
			fmt.Fprintf(w, "from :%d\n", from)
		}
		if merge > 0 {
			fmt.Fprintf(w, "merge :%d\n", merge)
		}
		fmt.Fprintf(w, "M 644 inline f\ndata %d\n%d\n\n", len(strconv.Itoa(mark))+1, mark)
		return mark
	}
	var goodMark int
	for i := 0; mark < n; i++ {
		if i > 0 && i%50 == 0 {
			s1 := commit("side", main, 0)
			s2 := commit("side", s1, 0)
			main = commit("main", main, s2)
		} else {
			main = commit("main", main, 0)
		}
		if goodMark == 0 && mark >= n-1000 {
			goodMark = main
		}
	}
	fmt.Fprintf(w, "reset refs/tags/good\nfrom :%d\n\nreset refs/tags/bad\nfrom :%d\n\n", goodMark, main)
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
	var good, bad string
	r, err := OpenRepo(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("resolve", func(b *testing.B) {
		for range b.N {
			repo, err := OpenRepo(dir)
			if err != nil {
				b.Fatal(err)
			}
			if good, err = Resolve(repo, "good"); err != nil {
				b.Fatal(err)
			}
			if bad, err = Resolve(repo, "bad"); err != nil {
				b.Fatal(err)
			}
		}
	})
	listed := func(b *testing.B, cs []Commit, err error) {
		if err != nil || len(cs) < 1000 {
			b.Fatalf("%d commits, %v", len(cs), err)
		}
		b.ReportMetric(float64(len(cs)), "commits")
	}
	b.Run("range-git", func(b *testing.B) {
		for range b.N {
			cs, err := rangeGit(gitDirOf(r), good, bad)
			listed(b, cs, err)
		}
	})
	b.Run("range-go-git", func(b *testing.B) {
		for range b.N {
			cs, err := rangeGoGit(r, good, bad)
			listed(b, cs, err)
		}
	})
	runGit(b, dir, nil, nil, "commit-graph", "write", "--reachable")
	b.Run("range-git-commit-graph", func(b *testing.B) {
		for range b.N {
			cs, err := rangeGit(gitDirOf(r), good, bad)
			listed(b, cs, err)
		}
	})
}
