package main

// End-to-end tests of the workloads beyond the built-in OLTP ones: a sysbench
// Lua script of the user's, with its own prepare, on a fixture whose culprit
// only that script's statements feel.

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

// joinFixture are the fixture options of a culprit only a join feels: the
// base server joins through a hash join (join_cache_level=4), the culprit's
// through the default block nested loop (2), which compares every buffered
// row with every row of the other table. testdata/lua/join.lua measured
// 3,460 against 170 tps with them; oltp_read_only, which joins nothing, 2,790
// against 2,840 (perfbisect bench on Debian's MariaDB 10.11, 2 threads).
var joinFixture = []string{
	"--base-options", "--innodb-buffer-pool-size=256M --innodb-log-file-size=48M --join-cache-level=4",
	"--culprit-options", "--innodb-buffer-pool-size=256M --innodb-log-file-size=48M --join-cache-level=2",
}

// copyDir copies the files of src into a new directory and returns it.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestBisectWithALuaScript: a sysbench Lua script of two files (join.lua
// requires join_common.lua), with its own options, its own prepare and its
// own tables (not sbtest's), bisects a fixture whose culprit only its join
// feels. The session is killed part-way; while it is unfinished, a start
// with the script required beside it edited is refused naming the script's
// content; restored, resume ends it at the culprit. The prepared datadir
// holds the script's tables; status, log (git bisect replay reaches the
// culprit) and the reports work as for the built-in workload. The tree is
// a git clone --reference of the fixture: a clone that borrows its objects
// bisects as the tree itself.
func TestBisectWithALuaScript(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools, testenv.Sysbench)
	tree, culprit := makeFixture(t, append([]string{"-n", "4", "--culprit-pos", "3", "--broken-pos", "0"}, joinFixture...)...)
	repo := referenceClone(t, tree)
	scripts := copyDir(t, filepath.Join(repoRoot(t), "cmd", "perfbisect", "testdata", "lua"))
	state := t.TempDir()
	out := filepath.Join(t.TempDir(), "result.json")
	args := []string{"start", "--repo", repo, "--good", "good", "--bad", "bad", "--state-dir", state, "--json", out,
		"--workload", filepath.Join(scripts, "join.lua"), "--workload-options", "--customers=2000 --span=100",
		"--threads", "2", "--time", "1", "--warmup", "1", "--no-explain", "--no-confirm"}

	// Killed once the endpoints have runs stored.
	cmd := command(t, args...)
	var first bytes.Buffer
	cmd.Stdout, cmd.Stderr = &first, &first
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, cmd, 6*time.Minute, "4 stored runs", func() bool {
		_, tps := storedRuns(t, state)
		return len(tps) >= 4
	})
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	time.Sleep(time.Second) // the server dies by its parent-death signal
	if s := serversUnder(state); len(s) > 0 {
		t.Errorf("servers outlived a kill -9 of perfbisect: %v", s)
	}
	if !strings.Contains(first.String(), "run by sysbench") && !strings.Contains(first.String(), "join.lua") {
		t.Errorf("the session's lines do not name the script:\n%s", tail(first.String(), 20))
	}

	// The file the script requires, edited: another workload.
	common := filepath.Join(scripts, "join_common.lua")
	orig, err := os.ReadFile(common)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(common, append(orig, []byte("\n-- edited\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := perfbisect(t, nil, args...); r.code != exitUsage || !strings.Contains(r.stderr, "workload script content") {
		t.Errorf("a start with the required file edited over the unfinished session: exit %d, want %d naming the script's content", r.code, exitUsage)
	}
	if err := os.WriteFile(common, orig, 0o644); err != nil {
		t.Fatal(err)
	}

	r := perfbisect(t, nil, "resume", "--state-dir", state, "--repo", repo)
	if r.code != exitOK || !strings.Contains(r.stdout, "first bad commit: "+culprit) {
		t.Fatalf("resumed session: exit %d, want 0 naming %s\n%s", r.code, culprit, tail(r.stderr, 30))
	}
	if !strings.Contains(r.stderr, "runs stored are used") {
		t.Errorf("resume did not say it reuses stored runs")
	}
	checkFinishedSession(t, repo, state, culprit, 0)

	// The script's own prepare made its tables in the snapshot, not sbtest's.
	var tables []string
	for _, tbl := range []string{"jc_customer", "jc_order", "sbtest1"} {
		if m, _ := filepath.Glob(filepath.Join(state, "datadirs", "*", "data", "sbtest", tbl+".ibd")); len(m) > 0 {
			tables = append(tables, tbl)
		}
	}
	if strings.Join(tables, " ") != "jc_customer jc_order" {
		t.Errorf("tables in the prepared datadirs: %v, want the script's jc_customer and jc_order only", tables)
	}

	md := perfbisect(t, nil, "report", "--state-dir", state, "--repo", repo, "--format", "markdown")
	if md.code != exitOK || !strings.Contains(md.stdout, "join.lua") || !strings.Contains(md.stdout, culprit[:10]) {
		t.Errorf("report --format markdown: exit %d, want the script and the culprit named\n%s", md.code, md.stdout)
	}
	page := filepath.Join(t.TempDir(), "lua.html")
	if h := perfbisect(t, nil, "report", "--state-dir", state, "--repo", repo, "--html", page); h.code != exitOK {
		t.Errorf("report --html: exit %d", h.code)
	} else if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), "workload join.lua") || !strings.Contains(string(b), "metric qps") {
		t.Errorf("the HTML page does not name the script and its metric, qps (%v)", err)
	}
	if s := serversUnder(state); len(s) > 0 {
		t.Errorf("servers left running: %v", s)
	}
}

// TestScriptWorkloadRefusals: what a script cannot take is refused before
// anything is built, naming what to do: an option of the script's that
// does not exist (sysbench's own check), an option perfbisect sets itself,
// a script that does not load, a name sysbench does not find, --driver
// builtin for a script.
func TestScriptWorkloadRefusals(t *testing.T) {
	testenv.Require(t, testenv.Git, testenv.Sysbench, testenv.BuildTools)
	repo, _ := makeFixture(t, "-n", "4", "--culprit-pos", "2", "--broken-pos", "0")
	scripts := copyDir(t, filepath.Join(repoRoot(t), "cmd", "perfbisect", "testdata", "lua"))
	broken := filepath.Join(t.TempDir(), "broken.lua")
	if err := os.WriteFile(broken, []byte("require(\"nowhere_to_be_found\")\nfunction event() end\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	join := filepath.Join(scripts, "join.lua")
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"an option the script lacks", []string{"--workload", join, "--workload-options", "--scale=3"}, []string{"--workload", "invalid option: --scale=3"}},
		{"a flag the script lacks", []string{"--workload", join, "--table-size", "1000"}, []string{"invalid option: --table_size=1000"}},
		{"an option perfbisect sets", []string{"--workload", join, "--workload-options", "--threads=4"}, []string{"--threads", "perfbisect sets it"}},
		{"a script that does not load", []string{"--workload", broken}, []string{"broken.lua", "nowhere_to_be_found"}},
		{"a missing script", []string{"--workload", filepath.Join(scripts, "nope.lua")}, []string{"nope.lua", "no such file"}},
		{"a name sysbench lacks", []string{"--workload", "select_random_rangez"}, []string{"unknown workload", "did you mean select_random_ranges?"}},
		{"builtin driver", []string{"--workload", join, "--driver", "builtin"}, []string{"sysbench runs it"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := perfbisect(t, nil, append([]string{"start", "--repo", repo, "--good", "good", "--bad", "bad", "--state-dir", t.TempDir()}, c.args...)...)
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d", r.code, exitUsage)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "build ") {
				t.Errorf("something was built before the refusal:\n%s", r.stderr)
			}
		})
	}
}

// TestBisectWithASQLWorkloadFile: the reason SQL workload files exist, in
// one test. On a fixture whose culprit only a join feels, docs/workloads/
// join.sql (a join of two tables) names the culprit, while oltp_read_only,
// which joins nothing, ends "no regression reproduced" (exit 3) on the same
// fixture. Status and the JSON report name the file.
func TestBisectWithASQLWorkloadFile(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	repo, culprit := makeFixture(t, append([]string{"-n", "6", "--culprit-pos", "4", "--broken-pos", "0"}, joinFixture...)...)
	file := filepath.Join(repoRoot(t), "docs", "workloads", "join.sql")
	common := []string{"--repo", repo, "--good", "good", "--bad", "bad", "--threshold", "20", "--max-repeats", "16", "--threads", "2", "--time", "1", "--warmup", "0.5", "--quiet", "--no-explain", "--no-confirm"}

	state := t.TempDir()
	out := filepath.Join(t.TempDir(), "join.json")
	r := perfbisect(t, nil, append([]string{"start", "--state-dir", state, "--json", out,
		"--workload", file, "--table-size", "2000", "--workload-options", "--span=100"}, common...)...)
	j := readJSON(t, out)
	if r.code != exitOK || j.FirstBad == nil || *j.FirstBad != culprit {
		t.Fatalf("join.sql: exit %d, first bad %v, want 0 naming %s (%s)", r.code, j.FirstBad, culprit, j.Why)
	}
	st := perfbisect(t, nil, "status", "--state-dir", state, "--repo", repo)
	if !strings.Contains(st.stdout, "first bad commit: "+culprit) {
		t.Errorf("status does not name the culprit:\n%s", st.stdout)
	}
	rep := perfbisect(t, nil, "report", "--state-dir", state, "--repo", repo, "--format", "json")
	if rep.code != exitOK || !strings.Contains(rep.stdout, "join.sql") {
		t.Errorf("report --format json: exit %d, the file not named", rep.code)
	}
	page := filepath.Join(t.TempDir(), "sql.html")
	if h := perfbisect(t, nil, "report", "--state-dir", state, "--repo", repo, "--html", page); h.code != exitOK {
		t.Errorf("report --html: exit %d", h.code)
	} else if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), "workload join.sql") {
		t.Errorf("the HTML page does not name the SQL workload file (%v)", err)
	}

	out = filepath.Join(t.TempDir(), "oltp.json")
	// 100,000 rows in 100-row ranges, server and client on CPUs of their
	// own: about 7% noise per run here (with 10,000 rows unpinned, 16-22%:
	// 16 runs a side to fit ±20%).
	oltp := []string{"start", "--state-dir", t.TempDir(), "--json", out,
		"--workload", "oltp_read_only", "--table-size", "100000", "--range-size", "100", "--rand-type", "uniform"}
	if runtime.NumCPU() >= 2 {
		oltp = append(oltp, "--server-cpus", "1", "--client-cpus", "0")
	}
	r = perfbisect(t, nil, append(oltp, common...)...)
	j = readJSON(t, out)
	if r.code != exitNoRegression || j.Result != "no-regression" {
		t.Errorf("oltp_read_only on the join's culprit: exit %d (%s), want %d: no regression reproduced (%s)", r.code, j.Result, exitNoRegression, j.Why)
	}
	if s := serversUnder(state); len(s) > 0 {
		t.Errorf("servers left running: %v", s)
	}
}

// TestBisectWithTPCC: the built-in TPC-C (--workload tpcc) names a culprit
// (an 8 MB buffer pool for the warehouse's 200 MB, binary logging with
// sync_binlog=1 and a flush of the redo log at every commit: about -60%
// tpmC, so a few runs decide), judged by its headline, tpmC, with each
// transaction's numbers in the runs.
func TestBisectWithTPCC(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	repo, culprit := makeFixture(t, "-n", "4", "--culprit-pos", "3", "--broken-pos", "0",
		"--base-options", "--innodb-buffer-pool-size=256M --innodb-log-file-size=48M --skip-log-bin --innodb-flush-log-at-trx-commit=2",
		"--culprit-options", "--innodb-buffer-pool-size=8M --innodb-log-file-size=48M --log-bin --sync-binlog=1 --innodb-flush-log-at-trx-commit=1")
	state := t.TempDir()
	out := filepath.Join(t.TempDir(), "tpcc.json")
	r := perfbisect(t, nil, "start", "--repo", repo, "--good", "good", "--bad", "bad", "--state-dir", state, "--json", out,
		"--workload", "tpcc", "--warehouses", "1", "--threads", "2", "--time", "1", "--warmup", "0.5", "--quiet", "--no-explain", "--no-confirm")
	j := readJSON(t, out)
	if r.code != exitOK || j.FirstBad == nil || *j.FirstBad != culprit {
		t.Fatalf("tpcc: exit %d, first bad %v, want 0 naming %s (%s)", r.code, j.FirstBad, culprit, j.Why)
	}
	var doc struct {
		Metric string `json:"metric"`
		Tested []struct {
			Runs []struct {
				TPMC float64 `json:"tpmc"`
				TPS  float64 `json:"tps"`
			} `json:"runs"`
		} `json:"tested"`
	}
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Metric != "tpmc" || len(doc.Tested) == 0 || len(doc.Tested[0].Runs) == 0 {
		t.Fatalf("json: metric %q, %d commits tested", doc.Metric, len(doc.Tested))
	}
	// tpmC is New-Orders per minute: about 45% of the transactions.
	run := doc.Tested[0].Runs[0]
	if share := run.TPMC / 60 / run.TPS; share < 0.35 || share > 0.55 {
		t.Errorf("tpmC %.0f against %.1f tps: New-Order is %.0f%% of the mix, want about 45%%", run.TPMC, run.TPS, 100*share)
	}
	if !strings.Contains(r.stdout, "tpmC") {
		t.Errorf("the answer does not say tpmC:\n%s", r.stdout)
	}
	// The HTML page names the workload and the metric.
	page := filepath.Join(t.TempDir(), "tpcc.html")
	if h := perfbisect(t, nil, "report", "--state-dir", state, "--repo", repo, "--html", page); h.code != exitOK {
		t.Errorf("report --html: exit %d", h.code)
	} else if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), "workload tpcc, 1 warehouse(s)") || !strings.Contains(string(b), "metric tpmc") {
		t.Errorf("the HTML page does not name the workload tpcc and the metric tpmc (%v)", err)
	}
	if s := serversUnder(state); len(s) > 0 {
		t.Errorf("servers left running: %v", s)
	}
}
