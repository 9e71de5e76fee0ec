package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/perfbisect/perfbisect/bisect/explain"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/internal/testenv"
)

// checkStatements checks an explanation's statements of oltp_read_only:
// no plan changed and, when slower is set, the first is a SELECT whose
// latency rose in every pair of runs. (The optimizer trace's 10% or so a
// statement is not beyond the spread of 6 runs a side on every day.)
func checkStatements(t *testing.T, d report.ExplainDoc, slower bool) {
	t.Helper()
	if len(d.Statements) == 0 {
		if slower {
			t.Errorf("no statement's latency changed")
		}
		return
	}
	s := d.Statements[0]
	if !strings.HasPrefix(s.SQL, "SELECT") || s.HeadLatency <= s.BaseLatency || s.Lo <= 0 || s.BasePerTxn <= 0 {
		t.Errorf("first statement %+v: want a SELECT, slower in every pair of runs", s)
	}
	for _, s := range d.Statements {
		if s.PlanChanged || len(s.BasePlan) == 0 && strings.HasPrefix(s.SQL, "SELECT") {
			t.Errorf("statement %s: plan changed %v, base plan %+v: want the same plan, and one", s.SQL, s.PlanChanged, s.BasePlan)
		}
	}
}

// explainDoc reads explain's JSON output.
func explainDoc(t *testing.T, out string) report.ExplainDoc {
	t.Helper()
	var d report.ExplainDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("explain's JSON: %v\n%s", err, out)
	}
	return d
}

// TestExplain: why a real server is slower, from profiled runs. A culprit
// that turns the optimizer trace on is CPU, spent in the trace's functions
// (Debian's mariadbd: its symbols, no debug package), and the settings say
// optimizer_trace (pinned to the base's value in the head's option file,
// which the fixture's command-line option overrides: said so), with the
// statements' plans the same. One build under a 256M and a 6M buffer pool
// is told by its counters (the buffer pool's misses per transaction), its
// statements (slower, same plans) and where it waits (performance_schema:
// InnoDB's waits). One build under two join_cache_level settings, with a
// sysbench Lua script's join: the join's time (performance_schema's
// digests) rose and its plan changed, shown from both servers.
func TestExplain(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	if err := explain.Check(); err != nil {
		t.Skip(err)
	}
	repo, _ := makeFixture(t, "-n", "4", "--culprit-pos", "2", "--broken-pos", "0",
		"--base-options", "--innodb-log-file-size=48M", "--culprit-options", "--innodb-log-file-size=48M --optimizer-trace=enabled=on")
	state := t.TempDir()
	common := []string{"--repo", repo, "--state-dir", state, "--workload", "oltp_read_only", "--table-size", "50000", "--rand-type", "uniform",
		"--range-size", "1000", "--threads", "2", "--time", "2", "--warmup", "0.5", "--quiet", "--format", "json"}

	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "keep"), []byte("the user's"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"explain", "good"}, "explain takes two sides"},
		{[]string{"explain", "good", "bad", "--out", full}, "is not empty"},
		{[]string{"explain", "good", "bad", "--call-graph", "lbr"}, "--call-graph \"lbr\""},
		{[]string{"explain", "good", "bad", "--runs", "1", "--out", filepath.Join(t.TempDir(), "x")}, "at least 2 runs"},
	} {
		if r := perfbisect(t, nil, append(c.args, common...)...); r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, want %d saying %q\n%s", c.args, r.code, exitUsage, c.want, r.stderr)
		}
	}
	if b, err := os.ReadFile(filepath.Join(full, "keep")); err != nil || string(b) != "the user's" {
		t.Errorf("the user's file in --out: %q, %v", b, err)
	}

	out := filepath.Join(t.TempDir(), "cpu")
	// 6 runs a side: 27 of 36 pairs must agree on the slowdown. At 4 a side
	// (12 of 16), of three runs on a noisy day one said CPU, one waiting
	// and one nothing (CPU per transaction +17% there, its pairs split).
	// Ranges of 10 rows: the trace's cost is per statement, so cheap
	// statements make it a large share (with 1000-row ranges, -3% to -10%
	// in one run or another, not always a change 27 pairs agree on).
	cpu := slices.Clone(common)
	cpu[slices.Index(cpu, "--range-size")+1] = "10"
	// A HOME of its own: perf's build-id cache of the profiled servers stays
	// in the runs' directories and goes with their perf.data, never into the
	// user's ~/.debug.
	home := t.TempDir()
	r := perfbisect(t, []string{"HOME=" + home}, append([]string{"explain", "good", "bad", "--out", out, "--runs", "6"}, cpu...)...)
	if r.code != 0 {
		t.Fatalf("explain good bad: exit %d\n%s", r.code, tail(r.stderr, 20))
	}
	if _, err := os.Stat(filepath.Join(home, ".debug")); err == nil {
		t.Errorf("explain wrote perf's build-id cache into HOME/.debug")
	}
	for _, pattern := range []string{"*/" + explain.PerfData, "perf-buildids"} {
		if left, _ := filepath.Glob(filepath.Join(out, "runs", pattern)); len(left) > 0 {
			t.Errorf("left after explain: %q", left)
		}
	}
	d := explainDoc(t, r.stdout)
	trace := regexp.MustCompile(`(?i)opt_trace|json_writer|single_line_formatting`)
	var top []string
	for _, f := range d.Functions[:min(3, len(d.Functions))] {
		top = append(top, f.Name)
	}
	if d.Kind != explain.KindCPU || !slices.ContainsFunc(top, trace.MatchString) || d.Functions[0].Change <= 0 {
		t.Errorf("kind %s, top functions %q: want CPU, the optimizer trace's among the first three, the first one slower", d.Kind, top)
	}
	if !slices.ContainsFunc(d.Settings, func(s explain.SettingChange) bool {
		return s.Name == "optimizer_trace" && strings.Contains(s.Head, "enabled=on")
	}) {
		t.Errorf("settings %+v: want optimizer_trace enabled=on in the head", d.Settings)
	}
	checkStatements(t, d, false)
	// The settings pinned: the fixture's culprit puts its option on the
	// server's command line, which wins over the option file; said so after
	// one run, and no verdict.
	if p := d.Pinned; p == nil || !slices.Contains(p.Settings, "optimizer_trace=enabled=off") || len(p.NotTaken) != 1 ||
		!strings.Contains(p.NotTaken[0], "optimizer_trace is enabled=on") || p.Verdict != "" {
		t.Errorf("pinned: %+v; want optimizer_trace=enabled=off pinned, not taken, no verdict", p)
	}
	for _, p := range []string{d.BaseProfile, d.HeadProfile} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		prof, err := profile.Parse(f)
		f.Close()
		if err != nil || len(prof.Sample) < 100 {
			t.Errorf("%s: %v, want a pprof profile of runs' samples", p, err)
		}
	}

	big := writeCnf(t, "big.cnf", "innodb_buffer_pool_size=256M")
	small := writeCnf(t, "small.cnf", "innodb_buffer_pool_size=6M")
	r = perfbisect(t, nil, append([]string{"explain", "good", "good", "--my-cnf", big, "--my-cnf", small, "--call-graph", "fp",
		"--out", filepath.Join(t.TempDir(), "pool")}, common...)...)
	if r.code != 0 {
		t.Fatalf("explain good good under two option files: exit %d\n%s", r.code, tail(r.stderr, 20))
	}
	d = explainDoc(t, r.stdout)
	// The first counters are the pool's misses: pages read in (on demand
	// or ahead) and pages evicted to make room. Its free pages are a level,
	// not a count.
	miss := regexp.MustCompile(`(?i)buffer_pool_reads|pages_read|data_reads?$|read_ahead|lru_freed|lru_get_free|evict`)
	var counters []string
	for _, c := range d.Counters {
		if c.New {
			counters = append(counters, c.Name+" new")
		} else {
			counters = append(counters, fmt.Sprintf("%s %+.0f%%", c.Name, 100*c.Change))
		}
	}
	reads := slices.IndexFunc(d.Counters, func(c explain.CounterChange) bool { return c.Name == "Innodb_buffer_pool_reads" })
	if reads < 0 || !d.Counters[reads].New && d.Counters[reads].Change <= 1 || len(d.Counters) < 3 || !miss.MatchString(d.Counters[0].Name) || !miss.MatchString(d.Counters[1].Name) ||
		!miss.MatchString(d.Counters[2].Name) || d.TPSChange > -0.2 {
		t.Errorf("throughput %+.1f%%, counters %q: want a fall, the first three the pool's misses, Innodb_buffer_pool_reads among them, new or more than doubled",
			100*d.TPSChange, counters)
	}
	for _, c := range d.Counters {
		if strings.Contains(c.Name, "pages_free") || strings.Contains(c.Name, "pages_data") {
			t.Errorf("counter %s %+.0f%%: a level (the pool's size in pages) is not a count of work", c.Name, 100*c.Change)
		}
	}
	if !slices.ContainsFunc(d.Settings, func(s explain.SettingChange) bool { return s.Name == "innodb_buffer_pool_size" }) {
		t.Errorf("settings %+v: want innodb_buffer_pool_size", d.Settings)
	}
	checkStatements(t, d, true)
	// Where the server waited: the pages it reads in, each a wait on an
	// InnoDB file or the pool (performance_schema on for these runs only).
	if !slices.ContainsFunc(d.Waits, func(w explain.WaitChange) bool { return strings.Contains(w.Name, "innodb") && w.Change > 0 }) {
		t.Errorf("waits %+v: want one of InnoDB's longer per transaction", d.Waits)
	}
	if d.Pinned != nil {
		t.Errorf("pinned %+v: two option files are which-setting's question, not pinned", d.Pinned)
	}

	// A plan that changed: the hash join (join_cache_level=4) against the
	// block nested loop (2) of one build, on the join a sysbench Lua script
	// sends as text: its time from performance_schema's digests, its plan
	// from EXPLAIN of the digest's sample on each server.
	hash := writeCnf(t, "hash.cnf", "join_cache_level=4")
	bnl := writeCnf(t, "bnl.cnf", "join_cache_level=2")
	r = perfbisect(t, nil, "explain", "good", "good", "--my-cnf", hash, "--my-cnf", bnl, "--runs", "2", "--out", filepath.Join(t.TempDir(), "join"),
		"--repo", repo, "--state-dir", state, "--workload", filepath.Join(repoRoot(t), "cmd", "perfbisect", "testdata", "lua", "join.lua"),
		"--workload-options", "--customers=2000 --span=100", "--threads", "2", "--time", "1", "--warmup", "1", "--quiet")
	if r.code != 0 {
		t.Fatalf("explain of two join_cache_level settings: exit %d\n%s", r.code, tail(r.stderr, 20))
	}
	for _, want := range []string{"statements whose latency changed (the server's time, performance_schema's statement digests", "plan changed",
		"the plan of SELECT COUNT ( * ) , SUM ( `o` . `amount` )", "BNLH join", "BNL join", "performance_schema's statement digests (the server's time"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("explain's text lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "FROM `performance_schema`") || strings.Contains(r.stdout, "SELECT @@`") {
		t.Errorf("perfbisect's own readings are among the workload's statements:\n%s", r.stdout)
	}
	if left := serversUnder(state); len(left) > 0 {
		t.Errorf("servers left running: %q", left)
	}
}
