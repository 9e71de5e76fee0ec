package main

// End-to-end tests of comparisons that are more than two commits of one
// tree: one build under two option files, two revisions and the system's
// installed server in one table, and an interrupted comparison that resumes.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/internal/testenv"
)

// referenceClone clones repo with git clone --reference (the clone borrows
// the objects of repo, as several clones of a large server history do) and
// returns the clone.
func referenceClone(t *testing.T, repo string) string {
	t.Helper()
	clone := filepath.Join(t.TempDir(), "clone")
	cmd := exec.Command("git", "clone", "-q", "--reference", repo, repo, clone)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git clone --reference: %v\n%s", err, out)
	}
	for _, tag := range []string{"good", "bad"} { // the fixture's tags, as clone copies them
		if gitOut(t, clone, "rev-parse", tag) != gitOut(t, repo, "rev-parse", tag) {
			t.Fatalf("the clone's %s is not the tree's", tag)
		}
	}
	return clone
}

// writeCnf writes an option file of lines under [mysqld] and returns it.
func writeCnf(t *testing.T, name string, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("[mysqld]\n"+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// compareDocs reads compare's JSON output: one document, or an array.
func compareDocs(t *testing.T, out string) []report.CompareDoc {
	t.Helper()
	var docs []report.CompareDoc
	if err := json.Unmarshal([]byte(out), &docs); err != nil {
		var one report.CompareDoc
		if err := json.Unmarshal([]byte(out), &one); err != nil {
			t.Fatalf("compare's JSON: %v\n%s", err, out)
		}
		docs = []report.CompareDoc{one}
	}
	return docs
}

// TestCompareSides, on a git clone --reference of the fixture (whose
// servers take their buffer pool from the option file; the culprit
// compiles in a small one):
//   - one build under two option files at a thread list: the file with the
//     small buffer pool is the regression at each thread count, the two
//     sides the same server binary;
//   - three sides, good, bad and the system's installed server (/usr),
//     killed part-way and run again: the stored runs are used, nothing is
//     measured twice; the table has a column per side, bad is the
//     regression and the exit code follows it;
//   - what is refused: one option file for three sides given twice, two
//     sides that are the same server under the same file, a directory with
//     no server, and a second --my-cnf for start.
func TestCompareSides(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	repo, _ := makeFixture(t, "-n", "4", "--culprit-pos", "3", "--broken-pos", "0",
		"--base-options", "--innodb-log-file-size=48M", "--culprit-options", "--innodb-log-file-size=48M --innodb-buffer-pool-size=6M")
	clone := referenceClone(t, repo)
	state := t.TempDir()
	big := writeCnf(t, "big.cnf", "innodb_buffer_pool_size=256M")
	small := writeCnf(t, "small.cnf", "innodb_buffer_pool_size=6M")
	common := append([]string{"--repo", clone, "--state-dir", state, "--workload", "oltp_read_only", "--threshold", "20",
		"--max-repeats", "10", "--format", "json", "--quiet"}, smallRun[2:]...)

	// What is refused, before anything is built.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", "good", "bad", "/usr", "--my-cnf", big, "--my-cnf", small}, "--my-cnf given 2 times for 3 sides"},
		{[]string{"compare", "good", "good", "--my-cnf", big}, "are the same server under the same option file"},
		{[]string{"compare", "good", t.TempDir()}, "not an installed server"},
		{[]string{"start", "--good", "good", "--bad", "bad", "--my-cnf", big, "--my-cnf", small}, "--my-cnf given 2 times"},
	} {
		args := append(c.args, common...)
		if c.args[0] == "start" {
			args = append(c.args, "--repo", clone, "--state-dir", state)
		}
		if r := perfbisect(t, nil, args...); r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, want %d saying %q\n%s", c.args, r.code, exitUsage, c.want, r.stderr)
		}
	}

	// One build, two option files, two thread counts.
	r := perfbisect(t, nil, append([]string{"compare", "good", "good", "--my-cnf", big, "--my-cnf", small, "--thread-list", "1,2"}, common...)...)
	docs := compareDocs(t, r.stdout)
	if r.code != exitRegression || len(docs) != 2 {
		t.Fatalf("good under big.cnf and small.cnf: exit %d, %d documents; want %d, one per thread count\n%s", r.code, len(docs), exitRegression, tail(r.stderr, 20))
	}
	for _, d := range docs {
		if d.Result != report.CompareRegression || d.BaseSide == nil || d.HeadSide == nil ||
			d.BaseSide.OptionFile != big || d.HeadSide.OptionFile != small || d.BaseSide.Server == "" || d.BaseSide.Server != d.HeadSide.Server {
			t.Errorf("threads %d: %s, sides %+v / %+v; want a regression, the same server under big.cnf and small.cnf", d.Threads, d.Result, d.BaseSide, d.HeadSide)
		}
	}

	// report --list names the sides as compare does, not by their keys.
	if r := perfbisect(t, nil, "report", "--list", "--state-dir", state); !strings.Contains(r.stdout, "good [big.cnf]..good [small.cnf]") || strings.Contains(r.stdout, "side-") {
		t.Errorf("report --list: exit %d, want the sides as typed with their option files\n%s", r.code, r.stdout)
	}

	// Three sides, killed once the first pair has runs stored.
	optionRuns := storedCompareRuns(t, state)
	three := append([]string{"compare", "good", "bad", "/usr", "--my-cnf", big}, common...)
	cmd := command(t, three...)
	var first bytes.Buffer
	cmd.Stdout, cmd.Stderr = &first, &first
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, cmd, 6*time.Minute, "6 stored runs of the three sides", func() bool { return storedCompareRuns(t, state) >= optionRuns+6 })
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	time.Sleep(time.Second) // the server dies by its parent-death signal
	before := storedCompareRuns(t, state)
	r = perfbisect(t, nil, slices.DeleteFunc(slices.Clone(three), func(a string) bool { return a == "--quiet" })...) // its progress says what it continues
	docs = compareDocs(t, r.stdout)
	if r.code != exitRegression || len(docs) != 2 {
		t.Fatalf("good, bad, /usr: exit %d, %d documents; want %d (bad regressed), two pairs\n%s", r.code, len(docs), exitRegression, tail(r.stderr, 30))
	}
	if !strings.Contains(r.stderr, "from its stored runs") && !strings.Contains(r.stderr, "measured by an earlier call") {
		t.Errorf("the second call did not continue the first:\n%s", tail(r.stderr, 30))
	}
	if bad := gitOut(t, clone, "rev-parse", "bad"); docs[0].Head != bad || docs[0].Result != report.CompareRegression {
		t.Errorf("bad against good: %.10s %s, want %.10s a regression", docs[0].Head, docs[0].Result, bad)
	}
	usr := docs[1]
	if usr.HeadSide == nil || !strings.HasPrefix(usr.HeadSide.Server, "/usr/") || !strings.Contains(usr.HeadSide.What, "installed") || usr.Result == report.CompareRegression {
		t.Errorf("/usr against good: %s, side %+v; want the installed server, no regression", usr.Result, usr.HeadSide)
	}
	// Nothing measured twice: every run stored since is in the answer.
	inDocs := 0
	for _, d := range docs {
		inDocs += len(d.BaseRuns) + len(d.HeadRuns)
	}
	if after := storedCompareRuns(t, state); after-optionRuns != inDocs || before-optionRuns < 6 {
		t.Errorf("runs stored for the three sides %d (%d before the second call), in the answer %d: measured twice or lost", after-optionRuns, before-optionRuns, inDocs)
	}
	if s := serversUnder(state); len(s) > 0 {
		t.Errorf("servers left running: %v", s)
	}
}

// storedCompareRuns counts the runs stored for every comparison in the
// state directory (0 before its store exists).
func storedCompareRuns(t *testing.T, state string) int {
	t.Helper()
	if _, err := os.Stat(filepath.Join(state, store.FileName)); err != nil {
		return 0
	}
	st, err := store.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	all, err := st.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range all {
		if x.Kind == store.KindCompare {
			c, err := st.RunCount(x.ID)
			if err != nil {
				t.Fatal(err)
			}
			n += c
		}
	}
	return n
}

// TestWhichSetting: one fixture revision under a good and a bad option
// file. Of three settings the bad file changes, the search names the one
// that slows the server (a buffer pool the data does not fit in), each
// test a stored comparison; of two that hurt only together (a thread pool
// of one group), it names the pair, and neither alone is slower (the same,
// or undecided at the repeat limit). A
// setting the server does not know is named and left out.
func TestWhichSetting(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	repo, _ := makeFixture(t, "-n", "4", "--culprit-pos", "3", "--broken-pos", "0", "--base-options", "--innodb-log-file-size=48M") // good only
	state := t.TempDir()
	common := append([]string{"--repo", repo, "--state-dir", state, "--workload", "oltp_read_only", "--threshold", "20",
		"--repeats", "6", "--max-repeats", "12", "--format", "json", "--which-setting"}, smallRun...) // 6 a side: the tests' levels decide at the first look
	good := writeCnf(t, "good.cnf", "innodb_buffer_pool_size=256M")
	bad := writeCnf(t, "bad.cnf", "innodb_buffer_pool_size=6M", "max_connections=200", "skip_name_resolve", "loose-no_such_setting_here=1")
	r := perfbisect(t, nil, append([]string{"compare", "good", "good", "--my-cnf", good, "--my-cnf", bad}, common...)...)
	var doc report.SettingsDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("exit %d, not JSON: %v\n%s\n%s", r.code, err, r.stdout, tail(r.stderr, 30))
	}
	if r.code != exitRegression || doc.Result != report.SettingsFound || len(doc.Minimal) != 1 || !strings.Contains(doc.Minimal[0], "innodb_buffer_pool_size=256M -> 6M") || doc.Together {
		t.Errorf("three settings: exit %d, %s %v (together %v); want the buffer pool alone\n%s", r.code, doc.Result, doc.Minimal, doc.Together, tail(r.stderr, 30))
	}
	if len(doc.Changes) != 4 || len(doc.Refused) != 1 || !strings.Contains(doc.Refused[0], "no_such_setting_here") {
		t.Errorf("changes %v, left out %v; want 4 changes, the unknown one left out", doc.Changes, doc.Refused)
	}
	if len(doc.Tests) < 2 || doc.Tests[0].Verdict != "fails" || len(doc.Tests[0].Settings) != 3 || doc.Tests[0].Session == 0 {
		t.Errorf("tests: %+v; want all three first (failing), each a stored comparison", doc.Tests)
	}

	// Two settings that only hurt together.
	// At most 6 runs a side: a setting alone that is not slower ends
	// undecided at the first look instead of measuring on to "the same".
	pair := writeCnf(t, "pair.cnf", "innodb_buffer_pool_size=256M", "thread_handling=pool-of-threads", "thread_pool_size=1")
	r = perfbisect(t, nil, append(append([]string{"compare", "good", "good", "--my-cnf", good, "--my-cnf", pair}, common...), "--max-repeats", "6")...)
	doc = report.SettingsDoc{}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("exit %d, not JSON: %v\n%s", r.code, err, tail(r.stderr, 30))
	}
	if r.code != exitRegression || len(doc.Minimal) != 2 || !doc.Together || len(doc.Alone) != 2 || doc.Alone[0].Verdict == "fails" || doc.Alone[1].Verdict == "fails" || doc.Alone[1].Session == 0 {
		t.Errorf("the pair: exit %d, %s %v (together %v, alone %+v); want both, only together\n%s", r.code, doc.Result, doc.Minimal, doc.Together, doc.Alone, tail(r.stderr, 30))
	}
	if s := serversUnder(state); len(s) > 0 {
		t.Errorf("servers left running: %v", s)
	}
}

// TestCompareInstalledWithoutATree: the system's installed server under two
// option files, from a directory that is no git tree and without --repo:
// nothing needs a tree, so nothing asks for one, and the small buffer pool
// is the regression. A setting the server does not know is refused before
// anything is measured, naming the side and where it is set; a revision
// side there says that it needs a tree.
func TestCompareInstalledWithoutATree(t *testing.T) {
	testenv.Require(t, testenv.Server)
	dir, state := t.TempDir(), t.TempDir()
	big := writeCnf(t, "big.cnf", "innodb_buffer_pool_size=256M")
	small := writeCnf(t, "small.cnf", "innodb_buffer_pool_size=6M")
	unknown := writeCnf(t, "unknown.cnf", "innodb_buffer_pool_size=256M\ninnodb_mtflush_threads=4")
	run := func(args ...string) result {
		t.Helper()
		cmd := command(t, append(args, "--state-dir", state)...)
		cmd.Dir = dir
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		err := cmd.Run()
		r := result{stdout: so.String(), stderr: se.String()}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := run("compare", "/usr", "/usr", "--my-cnf", big, "--my-cnf", unknown); r.code != exitUsage ||
		!strings.Contains(r.stderr, "side 2 (/usr)") || !strings.Contains(r.stderr, "innodb_mtflush_threads") || !strings.Contains(r.stderr, "unknown.cnf:") {
		t.Errorf("a setting the server does not know: exit %d, want %d naming side 2, the setting and where it is\n%s", r.code, exitUsage, r.stderr)
	}
	if r := run("compare", "HEAD", "/usr", "--my-cnf", big); r.code != exitUsage || !strings.Contains(r.stderr, "git") {
		t.Errorf("a revision without a tree: exit %d, want %d saying it needs a git tree\n%s", r.code, exitUsage, r.stderr)
	}
	r := run("compare", "/usr", "/usr", "--my-cnf", big, "--my-cnf", small, "--workload", "oltp_read_only", "--threshold", "20",
		"--max-repeats", "6", "--format", "json", "--quiet", "--threads", "2", "--time", "0.5", "--warmup", "0.25",
		"--table-size", "50000", "--range-size", "1000", "--rand-type", "uniform")
	docs := compareDocs(t, r.stdout)
	if r.code != exitRegression || len(docs) != 1 || docs[0].HeadSide == nil || !strings.HasPrefix(docs[0].HeadSide.Server, "/usr/") ||
		docs[0].HeadSide.OptionFile != small {
		t.Fatalf("/usr under big.cnf and small.cnf: exit %d, %d documents; want %d, the installed server under small.cnf the regression\n%s",
			r.code, len(docs), exitRegression, tail(r.stderr, 20))
	}
	if left := serversUnder(state); len(left) > 0 {
		t.Errorf("servers left running: %q", left)
	}
}
