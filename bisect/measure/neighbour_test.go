package measure

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/internal/neighbour"
	"github.com/perfbisect/perfbisect/internal/testenv"
)

func TestNeighbourRules(t *testing.T) {
	quiet := signs{waitShare: 0.10, throttled: 0, capacity: 10 * time.Second, clientPerTxn: 400, serverPerTxn: 2000}
	hist := []signs{quiet, quiet, quiet}
	with := func(f func(*signs)) signs { s := quiet; f(&s); return s }
	throttledFor := func(ms ...int) []signs {
		var h []signs
		for _, v := range ms {
			h = append(h, with(func(s *signs) { s.throttled = time.Duration(v) * time.Millisecond }))
		}
		return h
	}
	always := throttledFor(3000, 2900, 3100, 0, 3000, 2800, 3200)
	passing := throttledFor(0, 0, 3000, 1000, 0, 4000, 0, 1500)
	for _, c := range []struct {
		name string
		s    signs
		hist []signs
		kind string
	}{
		{"quiet", quiet, hist, ""},
		{"quiet, no history", quiet, nil, ""},
		{"throttled 1 s of 10", with(func(s *signs) { s.throttled = time.Second }), hist, "throttled"},
		{"throttled, no history yet", with(func(s *signs) { s.throttled = time.Second }), nil, "throttled"},
		{"throttled 0.1 s of 10", with(func(s *signs) { s.throttled = 100 * time.Millisecond }), hist, ""},
		// A quota that throttles every run of the revision is its level.
		{"throttled as always", with(func(s *signs) { s.throttled = 3 * time.Second }), always, ""},
		// In a window the quota throttled as usual, the wait and the CPU
		// per transaction it costs are the level too.
		{"throttled as always, waiting and dearer", with(func(s *signs) {
			s.throttled, s.waitShare, s.clientPerTxn, s.serverPerTxn = 3*time.Second, 0.8, 600, 2900
		}), always, ""},
		// A passing quota caught some runs, some in part: a throttled run is
		// not usual.
		{"throttled 0.7 s after a passing quota", with(func(s *signs) { s.throttled = 700 * time.Millisecond }), passing, "throttled"},
		{"throttled as always, too few runs", with(func(s *signs) { s.throttled = 3 * time.Second }), always[:5], "throttled"},
		{"throttled unknown", with(func(s *signs) { s.throttled = -1 }), hist, ""},
		{"waited 40%", with(func(s *signs) { s.waitShare = 0.40 }), hist, "descheduled"},
		{"waited 20%", with(func(s *signs) { s.waitShare = 0.20 }), hist, ""},
		{"waited 40%, two runs of history", with(func(s *signs) { s.waitShare = 0.40 }), hist[:2], ""},
		{"both CPUs per txn up", with(func(s *signs) { s.clientPerTxn, s.serverPerTxn = 560, 2400 }), hist, "slow machine"},
		// The revision's server alone got dearer in this run: not the machine.
		{"server CPU up alone", with(func(s *signs) { s.serverPerTxn = 3000 }), hist, ""},
		{"client CPU up alone", with(func(s *signs) { s.clientPerTxn = 600 }), hist, ""},
		{"client CPU unknown (sysbench unread)", with(func(s *signs) { s.clientPerTxn, s.serverPerTxn = 0, 3000 }), hist, ""},
	} {
		all := c.hist
		if len(all) < sessionHistory && len(all) > 0 && c.hist[0] == quiet {
			all = append(all, hist...) // enough quiet runs in the session
		}
		why, kind := neighbourSign(c.s, c.hist, all)
		if kind != c.kind || (kind == "") != (why == "") {
			t.Errorf("%s: kind %q (%s), want %q", c.name, kind, why, c.kind)
		}
	}
	d := disturbance{capacity: 20 * time.Second}
	d.why, d.kind = neighbourSign(with(func(s *signs) { s.waitShare = 0.5 }), hist, hist)
	if !d.disturbed() || !strings.Contains(d.String(), "descheduled") || strings.Join(d.kinds(), ",") != "descheduled" {
		t.Errorf("a descheduled run: disturbed %v, %q, kinds %v", d.disturbed(), d, d.kinds())
	}
}

// quotaLog lifts the CPU quota when the measurer says a run was disturbed.
type quotaLog struct {
	mu     sync.Mutex
	text   strings.Builder
	armed  bool // the quota is on: lift it at the first disturbed run
	lifted bool // the quota was lifted once
	keep   bool // leave the quota on
	cg     *neighbour.Cgroup
}

func (l *quotaLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.text.Write(p)
	if strings.Contains(string(p), "measured again, not counted") && l.armed && !l.lifted && !l.keep {
		l.lifted = true
		_ = l.cg.Limit(0)
	}
	return len(p), nil
}

// A real server on the fixture whose cgroup gets a CPU quota (as a container
// limit or a cgroup neighbour would give it) after three runs: that run is
// measured again and not counted, and the run returned says what was
// discarded and why; the quiet runs store the signs.
func TestThrottledRunIsMeasuredAgain(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	cg, err := neighbour.New(fmt.Sprintf("perfbisect-test-%d", os.Getpid()))
	if err != nil {
		t.Skipf("%v", err)
	}
	if err := cg.Add(os.Getpid()); err != nil { // the servers started from now on are in it too
		cg.Remove()
		t.Fatal(err)
	}
	defer cg.Remove()
	o := bench.DefaultOptions()
	o.Workload, o.TableSize, o.Threads, o.Time, o.RangeSize = "oltp_read_only", 10000, 2, time.Second, 100
	log := &quotaLog{cg: cg}
	m, rev, _ := fixtureMeasurer(t, Config{Workload: bench.OLTP{Options: o}, Log: log, ThrottledPause: time.Second})
	quiet, err := m.Measure(context.Background(), rev, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range quiet {
		share, err1 := strconv.ParseFloat(r.Facts["server_wait_share"], 64)
		th, err2 := strconv.ParseFloat(r.Facts["throttled_s"], 64)
		if err1 != nil || err2 != nil || share < 0 || share > 1 || th != 0 {
			t.Errorf("a quiet run's signs: server_wait_share %q, throttled_s %q", r.Facts["server_wait_share"], r.Facts["throttled_s"])
		}
	}
	// A quiet run measured again (another process in its window) is not
	// this quota's: the log lifts it only from now on.
	log.mu.Lock()
	log.armed = true
	log.mu.Unlock()
	if err := cg.Limit(0.3); err != nil {
		t.Fatal(err)
	}
	runs, err := m.Measure(context.Background(), rev, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := runs[0]
	t.Logf("quiet: %.0f %.0f %.0f tps; after the quota: %.1f tps, facts %v\nlog:\n%s", quiet[0].TPS, quiet[1].TPS, quiet[2].TPS, r.TPS, r.Facts, log.text.String())
	if !log.lifted {
		t.Fatalf("no run was found disturbed while the server's cgroup had 0.3 CPU")
	}
	if !strings.Contains(r.Facts[bisect.FactDiscardedKinds], "throttled") || !strings.Contains(r.Facts["discarded_runs"], "throttled") {
		t.Errorf("the run does not say a throttled run was discarded: %s %q, discarded_runs %q", bisect.FactDiscardedKinds, r.Facts[bisect.FactDiscardedKinds], r.Facts["discarded_runs"])
	}
	if m := regexp.MustCompile(`throttled for ([0-9.]+) of the window's ([0-9.]+) CPU-seconds`).FindStringSubmatch(r.Facts["discarded_runs"]); m == nil {
		t.Errorf("the discarded run does not say how long it was throttled: %q", r.Facts["discarded_runs"])
	} else if th, _ := strconv.ParseFloat(m[1], 64); th > 1.05*2*o.Time.Seconds() || th < 0.5*o.Time.Seconds() {
		// 0.3 of one CPU left: most of the window's CPU time was throttled.
		t.Errorf("the discarded run was throttled for %.2f CPU-seconds of a %s window: want about one or two CPUs' worth", th, o.Time)
	}
	if r.Facts["disturbed"] != "" || r.Facts["throttled_s"] != "0.00" {
		t.Errorf("the run that counts was throttled too: %v", r.Facts)
	}

	// A quota that stays (a container's CPU limit) becomes the level once
	// three in four of the session's recent runs began under it: its first
	// runs take the allowance, the later ones count unmarked.
	log.mu.Lock()
	log.keep = true
	log.mu.Unlock()
	if err := cg.Limit(0.3); err != nil {
		t.Fatal(err)
	}
	before := strings.Count(log.text.String(), "measured again, not counted")
	const stays = 10
	runs, err = m.Measure(context.Background(), rev, stays)
	if err != nil {
		t.Fatal(err)
	}
	r = runs[len(runs)-1]
	again := strings.Count(log.text.String(), "measured again, not counted") - before
	t.Logf("under a quota that stays: %d runs, %d attempts measured again; the last %.1f tps, facts %v", stays, again, r.TPS, r.Facts)
	if th, _ := strconv.ParseFloat(r.Facts["throttled_s"], 64); th < 0.5*o.Time.Seconds() || r.Facts["disturbed"] != "" {
		t.Errorf("under a quota that stays, the last run counted: throttled_s %s, disturbed %q: want throttled and unmarked (the level)", r.Facts["throttled_s"], r.Facts["disturbed"])
	}
	// Its re-measurements spent, a throttled run is measured again after a
	// pause rather than counted, until the quota is the level.
	if !strings.Contains(log.text.String(), "measuring it again in 1s") {
		t.Errorf("no throttled run waited to be measured again once the re-measurements were spent")
	}
	for i, r := range runs {
		if strings.Contains(r.Facts[bisect.FactDisturbedKinds], "throttled") {
			t.Errorf("run %d of %d under the quota counts, marked throttled: %v", i+1, len(runs), r.Facts)
		}
	}
	if !strings.Contains(log.text.String(), "a CPU quota (cpu.max, cpu.cfs_quota_us) is part of what every run measures") {
		t.Errorf("the quota that stays is not said")
	}
	// The allowance: at most 3 and a quarter of the revision's runs.
	if again < 1 || again > 3+(4+stays)/4 {
		t.Errorf("under a quota that stays, %d runs were measured again: want within the allowance", again)
	}
}

// TestHistoryFileKeepsTheSigns: a Measurer with a HistoryFile finds the
// signs an earlier process's runs left (a runner host's tasks are a
// process each), the last sessionWindow of them.
func TestHistoryFileKeepsTheSigns(t *testing.T) {
	file := filepath.Join(t.TempDir(), "history.json")
	m := New(Config{HistoryFile: file})
	for i := range sessionWindow + 3 {
		s := signs{waitShare: 0.1, throttled: time.Duration(i) * time.Millisecond, capacity: time.Second, clientPerTxn: 50, serverPerTxn: 500}
		m.signs["c1"] = append(m.signs["c1"], s)
		m.allSigns = append(m.allSigns, s)
	}
	m.saveHistory()
	again := New(Config{HistoryFile: file})
	if len(again.allSigns) != sessionWindow || len(again.signs["c1"]) != sessionWindow {
		t.Fatalf("read back %d signs, %d of c1; want the last %d", len(again.allSigns), len(again.signs["c1"]), sessionWindow)
	}
	if got := again.allSigns[sessionWindow-1]; got != m.allSigns[len(m.allSigns)-1] {
		t.Errorf("last sign %+v, want %+v", got, m.allSigns[len(m.allSigns)-1])
	}
	if err := os.WriteFile(file, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if broken := New(Config{HistoryFile: file}); len(broken.allSigns) != 0 {
		t.Errorf("an unreadable history gave %d signs", len(broken.allSigns))
	}
}
