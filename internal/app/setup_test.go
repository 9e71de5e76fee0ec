package app

import (
	"errors"
	"math"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/internal/usage"
)

// TestIdentityNamesWhatShapesTheAnswer: a changed workload field or policy
// changes the identity's key and is named in its Diff; extra entries are
// kept.
func TestIdentityNamesWhatShapesTheAnswer(t *testing.T) {
	s := &Setup{Bench: bench.DefaultOptions(), Driver: "builtin", Policy: session.Config{Repeats: 6, MaxRepeats: 100, Threshold: 0.05, Confidence: 0.99, Metric: session.TPS}}
	a := s.Identity("g", "b", map[string]string{"repo": "/src/server"})
	if a["repo"] != "/src/server" || a["good"] != "g" || a["workload Threads"] == "" {
		t.Fatalf("identity %v", a)
	}
	s.Bench.Threads++
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
		if OutcomeOf(err) != Usage || !strings.Contains(usage.Text(err, "--"), c.want) {
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
		if OutcomeOf(err) != Usage || !strings.Contains(usage.Text(err, "--"), want) {
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
