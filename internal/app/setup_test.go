package app

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/internal/usage"
)

// TestIdentityNamesWhatShapesTheAnswer: a changed workload field or policy
// changes the identity's key and is named in its Diff; extra entries are
// kept.
func TestIdentityNamesWhatShapesTheAnswer(t *testing.T) {
	s := &Setup{Workload: bench.OLTP{Options: bench.DefaultOptions()}, Policy: session.Config{Repeats: 6, MaxRepeats: 100, Threshold: 0.05, Confidence: 0.99, Metric: session.TPS}}
	a := s.Identity("g", "b", map[string]string{"repo": "/src/server"})
	if a["repo"] != "/src/server" || a["good"] != "g" || a["workload Threads"] == "" {
		t.Fatalf("identity %v", a)
	}
	s.Workload = s.Workload.WithThreads(s.Workload.Threads() + 1)
	b := s.Identity("g", "b", map[string]string{"repo": "/src/server"})
	if a.Key() == b.Key() {
		t.Fatal("a changed thread count keeps the key: runs of another workload would be reused")
	}
	if d := a.Diff(b); !strings.Contains(d, "Threads") {
		t.Errorf("Diff = %q, want it to name Threads", d)
	}
}

func TestSessionError(t *testing.T) {
	dir := t.TempDir()
	if err := SessionError(errors.New("x"), true, dir, ""); OutcomeOf(err) != Interrupted || !strings.Contains(err.Error(), "perfbisect resume --state-dir "+dir) {
		t.Errorf("interrupted: %v", err)
	}
	if err := SessionError(&session.EndpointError{Which: "good", Err: errors.New("does not build")}, false, dir, ""); OutcomeOf(err) != Usage {
		t.Errorf("an endpoint that cannot be measured: %v, want usage", err)
	}
	err := SessionError(errors.New("store: database or disk is full (13)"), false, dir, "")
	if OutcomeOf(err) != Failure || !strings.Contains(err.Error(), "is full") || !strings.Contains(err.Error(), "the session is kept") {
		t.Errorf("a full disk: %v", err)
	}
}

// TestScanRequestCheck: a range without both ends, --every below 1, --runs
// outside 1..100 and --every with --merges are usage errors naming the
// setting; a good request passes.
func TestScanRequestCheck(t *testing.T) {
	good := ScanRequest{Range: "a..b", Every: 1, Runs: 3}
	if err := good.Check(); err != nil {
		t.Fatalf("good request refused: %v", err)
	}
	for _, c := range []struct {
		mut  func(*ScanRequest)
		want string
	}{
		{func(r *ScanRequest) { r.Range = "a.." }, "FROM..TO"},
		{func(r *ScanRequest) { r.Range = "a...b" }, "FROM..TO"},
		{func(r *ScanRequest) { r.Every = 0 }, "--every 0"},
		{func(r *ScanRequest) { r.Runs = 101 }, "--runs 101"},
		{func(r *ScanRequest) { r.EverySet, r.Merges = true, true }, "--every and --merges"},
	} {
		r := good
		c.mut(&r)
		err := r.Check()
		if OutcomeOf(err) != Usage || !strings.Contains(usage.TextNamed(err, func(n string) string { return "--" + n }), c.want) {
			t.Errorf("%+v: got %v (outcome %v), want a usage error with %q", r, err, OutcomeOf(err), c.want)
		}
	}
}

// TestParseBenchArgs: perfbisect's own options are taken out anywhere on
// the line, sysbench's are read, and each wrong line is a usage error that
// says what is wrong.
func TestParseBenchArgs(t *testing.T) {
	req, verbose, _, help, err := ParseBenchArgs([]string{"--driver=sysbench", "oltp_read_only", "--threads=4", "-v", "--format", "json", "run"})
	if err != nil || help || !verbose || !req.Sysbench || req.Format != "json" || req.Command != "run" || req.Options.Threads != 4 {
		t.Fatalf("got %+v verbose=%v help=%v err=%v", req, verbose, help, err)
	}
	if _, _, _, help, err := ParseBenchArgs([]string{"oltp_read_only", "--help"}); !help || err != nil {
		t.Errorf("--help: help=%v err=%v", help, err)
	}
	_, _, notes, _, err := ParseBenchArgs([]string{"oltp_insert", "--auto-inc=off", "run"})
	if err != nil || len(notes) == 0 || !strings.Contains(notes[len(notes)-1], "--rand-seed from the clock") {
		t.Errorf("oltp_insert: notes %q, err %v", notes, err)
	}
	for args, want := range map[string]string{
		"--driver x oltp_read_only run":            "--driver \"x\"",
		"oltp_read_only --format xml run":          "--format \"xml\"",
		"oltp_read_only --output out.json prepare": "--output and --format are for run",
		"oltp_read_only":                           "prepare, run or cleanup",
		"oltp_read_only --thraeds=3 run":           "--thraeds",
		"oltp_read_only prewarm":                   "prewarm: not supported",
		"oltp_read_only run --output":              "--output needs a value",
	} {
		_, _, _, _, err := ParseBenchArgs(strings.Fields(args))
		if OutcomeOf(err) != Usage || !strings.Contains(usage.TextNamed(err, func(n string) string { return "--" + n }), want) {
			t.Errorf("%s: got %v, want a usage error with %q", args, err, want)
		}
	}
}

// TestLimitMemory: perfbisect's soft memory limit applies unless GOMEMLIMIT
// names one (which the runtime then keeps).
func TestLimitMemory(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	t.Setenv("GOMEMLIMIT", "")
	debug.SetMemoryLimit(math.MaxInt64)
	LimitMemory()
	if got := debug.SetMemoryLimit(-1); got != MemoryLimit {
		t.Errorf("limit %d, want %d", got, MemoryLimit)
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(1 << 30)
	LimitMemory()
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("with GOMEMLIMIT=1GiB: limit %d, want %d", got, 1<<30)
	}
}

// TestConfigureTakesTheSearchsDefaults: start's probabilistic search checks
// --repeats against its own repeat limit (100) unless --max-repeats is
// given, and the classic search and the other commands against 18.
func TestConfigureTakesTheSearchsDefaults(t *testing.T) {
	repo, _, _ := gitRepo(t, 2)
	req := SetupRequest{Repo: repo, Workload: WorkloadRequest{Name: "oltp_read_only", Threads: 1, Tables: 1, TableSize: 100,
		Time: "1", Warmup: "0", RangeSize: 10, RandType: "uniform", RandSeed: 1},
		Driver: "builtin", SnapshotCacheSize: "1GiB", StartTimeout: "3m", Repeats: 20, MaxRepeats: 18, Threshold: "5",
		Confidence: "0.95", Metric: "tps", Find: "regression", Build: BuildRequest{Preset: "auto", CacheSize: "1GiB", BuildCmd: "true"}}
	for _, c := range []struct {
		search        string
		maxRepeatsSet bool
		ok            bool
	}{
		{session.SearchBayes, false, true},
		{session.SearchBayes, true, false},
		{session.SearchClassic, false, false},
		{"", false, false}, // compare, scan, run
	} {
		r := req
		if c.search != "" {
			r.Search = &SearchRequest{Search: c.search, Jobs: 1, MaxRepeatsSet: c.maxRepeatsSet}
		}
		s := &Setup{Log: io.Discard}
		err := s.Configure(context.Background(), r)
		switch {
		case c.ok && err != nil:
			t.Errorf("%q (max-repeats set %v): %v", c.search, c.maxRepeatsSet, err)
		case c.ok && (s.Policy.MaxRepeats != 18 || s.Policy.Confidence != 0.95):
			// The search's own are SearchPolicy's: a resumed session may
			// go on with the command's (asBegun).
			t.Errorf("%q: the policy was changed: max-repeats %d, confidence %g", c.search, s.Policy.MaxRepeats, s.Policy.Confidence)
		case c.ok && (s.SearchPolicy.MaxRepeats != session.BayesEndpointRuns || s.SearchPolicy.Confidence != BayesConfidence || s.SearchPolicy.Search != c.search):
			t.Errorf("%q: the search's policy: %s, max-repeats %d, confidence %g; want the search's own", c.search, s.SearchPolicy.Search, s.SearchPolicy.MaxRepeats, s.SearchPolicy.Confidence)
		case !c.ok && (OutcomeOf(err) != Usage || !strings.Contains(usage.TextNamed(err, func(n string) string { return "--" + n }), "--max-repeats 18 is below --repeats 20")):
			t.Errorf("%q (max-repeats set %v): got %v, want --max-repeats 18 refused", c.search, c.maxRepeatsSet, err)
		}
	}
}

// TestConfigureNotesMaxRunsOfTheClassicSearch: --max-runs with the classic
// search, which has no run budget, is said (not refused: a stored classic
// session with it must still resume); with the probabilistic search it is not.
func TestConfigureNotesMaxRunsOfTheClassicSearch(t *testing.T) {
	repo, _, _ := gitRepo(t, 2)
	req := SetupRequest{Repo: repo, Workload: WorkloadRequest{Name: "oltp_read_only", Threads: 1, Tables: 1, TableSize: 100,
		Time: "1", Warmup: "0", RangeSize: 10, RandType: "uniform", RandSeed: 1},
		Driver: "builtin", SnapshotCacheSize: "1GiB", StartTimeout: "3m", Repeats: 4, MaxRepeats: 18, Threshold: "5",
		Confidence: "0.95", Metric: "tps", Find: "regression", Build: BuildRequest{Preset: "auto", CacheSize: "1GiB", BuildCmd: "true"}}
	for _, search := range []string{session.SearchClassic, session.SearchBayes} {
		var log strings.Builder
		r := req
		r.Search = &SearchRequest{Search: search, Jobs: 1, MaxRuns: 40}
		s := &Setup{Log: &log}
		if err := s.Configure(context.Background(), r); err != nil {
			t.Fatalf("%s: %v", search, err)
		}
		noted := strings.Contains(log.String(), "--max-runs 40 is the probabilistic search's run budget")
		if noted != (search == session.SearchClassic) {
			t.Errorf("%s: noted %v\n%s", search, noted, log.String())
		}
	}
}

// OtherSessions names what status cannot show: compares and scans, by kind,
// with the running ones apart ("status" said "no session" beside a running
// compare).
func TestOtherSessions(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := OtherSessions(st); got != "" {
		t.Errorf("an empty store: %q", got)
	}
	id := store.Identity{"repo": "r", "metric": "tps"}
	for i, k := range []store.Kind{store.KindCompare, store.KindScan, store.KindScan, store.KindStart, store.KindCompare} {
		s, err := st.Begin(k, []string{string(k)}, "r", "a", "b", id)
		if err != nil {
			t.Fatal(err)
		}
		if i < 4 {
			if err := st.End(s.ID, store.Done, "done", nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, want := OtherSessions(st), "1 compare, 2 scans, 1 compare running"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestConfigureRefusesAReportOverAnOptionFile: a report flag naming an
// option file of --my-cnf (the same file by another path too) is refused
// before anything is read or written; an unwritable report is refused; a
// report elsewhere passes.
func TestConfigureRefusesAReportOverAnOptionFile(t *testing.T) {
	repo, _, _ := gitRepo(t, 2)
	dir := t.TempDir()
	cnf := filepath.Join(dir, "bench.cnf")
	if err := os.WriteFile(cnf, []byte("[mysqld]\nmax_connections=100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	req := SetupRequest{Repo: repo, MyCnf: []string{cnf}, Workload: WorkloadRequest{Name: "oltp_read_only", Threads: 1, Tables: 1, TableSize: 100,
		Time: "1", Warmup: "0", RangeSize: 10, RandType: "uniform", RandSeed: 1},
		Driver: "builtin", SnapshotCacheSize: "1GiB", StartTimeout: "3m", Repeats: 3, MaxRepeats: 18, Threshold: "5",
		Confidence: "0.95", Metric: "tps", Find: "regression", Build: BuildRequest{Preset: "auto", CacheSize: "1GiB", BuildCmd: "true"}}
	for _, c := range []struct {
		reports map[string]string
		want    string // "" when accepted
	}{
		{map[string]string{"output": filepath.Join(dir, "..", filepath.Base(dir), "bench.cnf")}, "--output"},
		{map[string]string{"json": cnf, "html": ""}, "--json " + cnf + " is the option file --my-cnf"},
		{map[string]string{"json": filepath.Join(dir, "missing", "r.json")}, "--json"},
		{map[string]string{"json": filepath.Join(dir, "r.json")}, ""},
	} {
		r := req
		r.Reports = c.reports
		err := (&Setup{Log: io.Discard}).Configure(context.Background(), r)
		got := usage.TextNamed(err, func(n string) string { return "--" + n })
		if c.want == "" && err != nil || c.want != "" && (OutcomeOf(err) != Usage || !strings.Contains(got, c.want)) {
			t.Errorf("%v: %v, want %q", c.reports, err, c.want)
		}
	}
	if b, _ := os.ReadFile(cnf); string(b) != "[mysqld]\nmax_connections=100\n" {
		t.Errorf("the option file changed: %q", b)
	}
}
