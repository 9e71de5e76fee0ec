package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/internal/browsertest"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

// The CI job of a fixture-kind repository, as scripts/ci-compare.sh runs it
// in a CI checkout: origin/main is the culprit's parent. A change that is the
// culprit is a regression (exit 5; measured by real sysbench, whole-second
// windows), with a markdown summary naming it and an HTML report whose strip
// charts, loaded in headless Chromium, hold every stored run; a change that
// only edits the README is not (exit 0). Both are stored and render again as
// JUnit.
func TestCIJobComparesOriginMainWithHead(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	fixture, culprit := makeFixture(t, "--commits", "5", "--culprit-pos", "3", "--broken-pos", "0")
	gitC := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=CI", "-c", "user.email=ci@example.org"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gitC(fixture, "branch", "slow-change", culprit)
	gitC(fixture, "checkout", "-q", "-B", "main", culprit+"^")
	ci := filepath.Join(t.TempDir(), "checkout")
	gitC(filepath.Dir(ci), "clone", "-q", fixture, ci)
	state := t.TempDir()
	job := func(out string, extra ...string) result {
		cmd := exec.Command("bash", append([]string{filepath.Join(repoRoot(t), "scripts", "ci-compare.sh"), "--",
			"--workload", "oltp_read_only", "--table-size", "100000", "--range-size", "1000", "--rand-type", "uniform",
			"--threshold", "15", "--state-dir", state}, append(fastRun, extra...)...)...)
		cmd.Dir = ci
		cmd.Env = append(os.Environ(), "PERFBISECT="+binary, "OUT="+out, "GITHUB_STEP_SUMMARY=")
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		err := cmd.Run()
		r := result{stdout: so.String(), stderr: se.String()}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return r
	}

	// The pull request that slows the server down.
	gitC(ci, "checkout", "-q", "-b", "slow-change", "origin/slow-change")
	out := t.TempDir()
	r := job(out, "--time", "1", "--warmup", "1", "--driver", "sysbench")
	if r.code != exitRegression {
		t.Fatalf("culprit against origin/main: exit %d, want %d\n%s\n%s", r.code, exitRegression, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "perfbisect.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	t.Logf("markdown:\n%s", md)
	if !strings.Contains(md, "regression") || !strings.Contains(md, "| **tps** |") || !strings.Contains(md, culprit[:10]) ||
		!strings.Contains(md, "| cpu-per-txn (us/txn) |") || !strings.Contains(md, "run by sysbench") || !strings.Contains(r.stdout, md) {
		t.Errorf("markdown summary lacks the verdict, the tps row, the head, the cpu row or the driver, or was not printed")
	}
	var doc struct {
		BaseRuns []json.RawMessage `json:"base_runs"`
		HeadRuns []json.RawMessage `json:"head_runs"`
	}
	stored := perfbisect(t, nil, "report", "--state-dir", state, "--format", "json")
	if err := json.Unmarshal([]byte(stored.stdout), &doc); err != nil || len(doc.BaseRuns) < 2 {
		t.Fatalf("stored comparison: %v\n%s", err, stored.stdout)
	}
	page := browsertest.Load(t, filepath.Join(out, "perfbisect.html"), "ci-regression.png")
	if len(page.Errors) > 0 {
		t.Errorf("console errors: %q", page.Errors)
	}
	var counts []int
	for _, c := range page.Canvases {
		if c.Kind == "runs" {
			d, _ := c.Dataset("runs")
			counts = append(counts, d.Inside)
		}
	}
	if len(counts) != 2 || counts[0] != len(doc.BaseRuns) || counts[1] != len(doc.HeadRuns) {
		t.Errorf("HTML strip charts drew %v runs, want base %d and head %d", counts, len(doc.BaseRuns), len(doc.HeadRuns))
	}

	// A pull request that only edits the README.
	gitC(ci, "checkout", "-q", "-b", "docs-change", "origin/main")
	f, err := os.OpenFile(filepath.Join(ci, "README.md"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\nA note that changes nothing.\n")
	f.Close()
	gitC(ci, "commit", "-qam", "Docs: a note")
	out = t.TempDir()
	// "No regression" needs the change's interval inside the threshold; on a
	// noisy shared runner (a VM whose host takes half its CPU: runs 20%
	// apart) 18+18 runs of 1.5 s give about [-20%, +30%], so this job's
	// threshold is the one such a runner would be given.
	r = job(out, "--threshold", "35")
	if r.code != exitOK {
		t.Fatalf("docs change against origin/main: exit %d, want %d\n%s\n%s", r.code, exitOK, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "perfbisect.md")); !strings.Contains(string(b), "no-regression") {
		t.Errorf("markdown summary of the docs change:\n%s", b)
	}
	if st, err := os.Stat(filepath.Join(out, "perfbisect.html")); err != nil || st.Size() < 100000 {
		t.Errorf("HTML report of the docs change: %v", err)
	}
	r = perfbisect(t, nil, "report", "1", "--state-dir", state, "--format", "junit")
	if r.code != exitOK || !strings.Contains(r.stdout, `failures="1"`) {
		t.Errorf("report 1 --format junit: exit %d\n%s", r.code, r.stdout)
	}
}

// perfbisect compare with --thread-list: two revisions that both have the
// culprit are not a regression at any thread count (exit 0, JUnit XML
// without failures, one suite per count); flags after the revisions are read
// as flags, as users type them; the comparisons are stored and render again.
func TestCompareThreadListJUnit(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	repo, culprit := makeFixture(t, "--commits", "8", "--culprit-pos", "4", "--broken-pos", "0")
	state := t.TempDir()
	// Two revisions that both have the culprit: no regression.
	r := perfbisect(t, nil, append([]string{"compare", "--repo", repo, culprit, "bad", "--format", "junit", "--thread-list", "1,2",
		"--workload", "oltp_read_only", "--threshold", "15", "--max-repeats", "6", "--quiet", "--state-dir", state}, smallRun[2:]...)...) // its --threads would be refused
	if r.code != exitOK && r.code != exitUndecided {
		t.Fatalf("culprit vs bad: exit %d, want 0 (or 4 if the noise kept it undecided)\n%s", r.code, r.stderr)
	}
	var suites struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Cases    []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(r.stdout), &suites); err != nil {
		t.Fatalf("junit output is not XML: %v\n%s", err, r.stdout)
	}
	if len(suites.Suites) != 2 || suites.Suites[0].Failures+suites.Suites[1].Failures != 0 || suites.Suites[0].Tests < 3 || suites.Suites[0].Cases[0].Name == "" {
		t.Errorf("junit: %+v\n%s", suites, r.stdout)
	}
	// The comparisons (one per thread count) are stored and render again;
	// status (bisections only) does not take them for one, and says what
	// the state directory holds.
	r = perfbisect(t, nil, "report", "--state-dir", state, "--list")
	if r.code != exitOK || strings.Count(r.stdout, "compare") != 2 {
		t.Errorf("report --list: exit %d\n%s", r.code, r.stdout)
	}
	r = perfbisect(t, nil, "report", "1", "--state-dir", state, "--format", "junit")
	if r.code != exitOK || !strings.Contains(r.stdout, `failures="0"`) {
		t.Errorf("report 1 --format junit: exit %d\n%s", r.code, r.stdout)
	}
	page := filepath.Join(t.TempDir(), "again.html")
	r = perfbisect(t, nil, "report", "2", "--state-dir", state, "--html", page)
	b, _ := os.ReadFile(page)
	if r.code != exitOK || !strings.Contains(r.stdout, "wrote "+page) || !strings.Contains(string(b), culprit[:10]) ||
		strings.Count(string(b), `data-kind="runs"`) != 2 || !strings.Contains(string(b), "innodb-buffer-pool-size") {
		t.Errorf("report 2 --html: exit %d, %d bytes\n%s%s", r.code, len(b), r.stdout, r.stderr)
	}
	r = perfbisect(t, nil, "report", "--state-dir", state, "--format", "markdown")
	if r.code != exitOK || !strings.Contains(r.stdout, "no-regression") && !strings.Contains(r.stdout, "inconclusive") {
		t.Errorf("report (newest) --format markdown: exit %d\n%s", r.code, r.stdout)
	}
	r = perfbisect(t, nil, "status", "--state-dir", state)
	if r.code != exitUsage || !strings.Contains(r.stderr, "no bisection in") || !strings.Contains(r.stderr, "it holds 2 compares (perfbisect report --list") {
		t.Errorf("status after two compares: exit %d\n%s", r.code, r.stderr)
	}
}

// perfbisect scan over a fixture history with two regressions, with real
// servers: every commit measured, both shifts found as the pairs (each
// culprit's parent, the culprit), each printed with the start command that
// bisects it; exit 5 for a regression. The fixture's buffer pool goes from
// 256M to 32M at the first culprit and to 6M at the second (measured with
// scripts/measure-fixture-effect.sh: 841 -> 361 -> about 215 tps).
func TestScanFindsBothRegressions(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	repo, culprit := makeFixture(t, "--commits", "8", "--culprit-pos", "3", "--second-culprit-pos", "6", "--broken-pos", "0",
		"--culprit-options", "--innodb-buffer-pool-size=32M --innodb-log-file-size=48M",
		"--second-culprit-options", "--innodb-buffer-pool-size=6M --innodb-log-file-size=48M")
	second := fixtureEnv(t, repo)["SECOND_CULPRIT_SHA"]
	page := filepath.Join(t.TempDir(), "scan.html")
	// Shifts of -40% and more: 3 half-second runs per commit tell them.
	r := perfbisect(t, nil, append([]string{"scan", "good..bad", "--repo", repo, "--runs", "3", "--html", page,
		"--workload", "oltp_read_only", "--threshold", "15", "--quiet", "--state-dir", t.TempDir()}, smallRun...)...)
	t.Logf("stdout:\n%s", r.stdout)
	if r.code != exitRegression {
		t.Fatalf("scan: exit %d, want %d\n%s", r.code, exitRegression, r.stderr)
	}
	for _, c := range []string{culprit, second} {
		if !strings.Contains(r.stdout, "--bad "+c[:12]) {
			t.Errorf("scan output does not name the shift at the culprit %.12s with its start command", c)
		}
	}
	if !strings.Contains(r.stdout, "regression -") || !strings.Contains(r.stdout, "perfbisect start --good ") || !strings.Contains(r.stdout, "--threshold 15") {
		t.Errorf("scan output lacks the magnitude or the start command")
	}
	if n := strings.Count(r.stdout, "\nregression") + strings.Count(r.stdout, "\nimprovement"); n != 2 {
		t.Errorf("%d shifts reported, want 2", n)
	}
	// The HTML page: every run of the 9 commits in the series chart, and a
	// segment line each side of each shift.
	got := browsertest.Load(t, page, "scan.png")
	if len(got.Errors) > 0 || len(got.Canvases) != 1 {
		t.Fatalf("scan page: console %q, %d canvases", got.Errors, len(got.Canvases))
	}
	segments := 0
	for _, ds := range got.Canvases[0].Datasets {
		if strings.HasPrefix(ds.Label, "segment ") && ds.Inside == 2 {
			segments++
		}
	}
	if runs, _ := got.Canvases[0].Dataset("runs"); runs.Inside != 9*3 || segments != 3 {
		t.Errorf("scan chart: %d runs drawn (want 27), %d segment lines (want 3)", runs.Inside, segments)
	}
}

// fixtureEnv reads the KEY=VALUE lines make-fixture.sh leaves in the
// repository's .git/perfbisect-fixture.env.
func fixtureEnv(t *testing.T, repo string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, ".git", "perfbisect-fixture.env"))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	return env
}

// TestCompareFreshDatadir compares two good revisions with --fresh-datadir:
// every run initialises and loads its own datadir (no snapshot is kept), and
// the runs carry the placement and the overridden settings of the option file.
func TestCompareFreshDatadir(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	repo, _ := makeFixture(t, "--commits", "4", "--culprit-pos", "4", "--broken-pos", "0")
	state := t.TempDir()
	cnf := filepath.Join(t.TempDir(), "bench.cnf")
	os.WriteFile(cnf, []byte("[mysqld]\ninnodb_buffer_pool_size=64M\nport = 3306\n"), 0o644)
	r := perfbisect(t, nil, "compare", "--repo", repo, "good", "bad~1", "--fresh-datadir", "--format", "json",
		"--my-cnf", cnf, "--table-size", "2000", "--repeats", "4", "--max-repeats", "4", "--threshold", "50",
		"--threads", "1", "--time", "0.5", "--warmup", "0", "--state-dir", state, "--quiet")
	if r.code != exitOK && r.code != exitUndecided {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var doc struct {
		BaseRuns []struct {
			TPS   float64           `json:"tps"`
			Facts map[string]string `json:"facts"`
		} `json:"base_runs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if len(doc.BaseRuns) < 4 {
		t.Fatalf("%d base runs", len(doc.BaseRuns))
	}
	for _, run := range doc.BaseRuns {
		if run.TPS <= 0 || !strings.Contains(run.Facts["overridden"], "bench.cnf:3 port=3306 -> ") || run.Facts["server_cpus"] == "" {
			t.Errorf("run: %+v", run)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(state, "datadirs")); len(ents) > 0 {
		t.Errorf("--fresh-datadir kept snapshots: %v", ents)
	}
	if s := serversUnder(state); len(s) > 0 {
		t.Errorf("servers left running: %v", s)
	}
}
