package session

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/simmeasure"
	"github.com/perfbisect/perfbisect/stats"
)

// config is the classic search's policy of these tests (bayes_test.go tests
// the probabilistic search).
func config(cs []bisect.Commit, hs []string) Config {
	return Config{Good: hs[0], Bad: hs[len(hs)-1], Commits: cs, Repeats: 6, MaxRepeats: 18,
		Threshold: 0.05, Confidence: 0.95, Metric: TPS, Search: SearchClassic}
}

func TestFindsCulpritWithSkipAndDrift(t *testing.T) {
	cs, hs := simmeasure.Chain(40)
	for seed := uint64(1); seed <= 5; seed++ {
		m := &simmeasure.Measurer{Commits: cs, Base: 660, Culprits: map[string]float64{hs[23]: 0.4}, CV: 0.05,
			DriftPerRun: -0.0005, Untestable: map[string]string{hs[11]: "build failed"},
			Rand: rand.New(rand.NewPCG(seed, 7))}
		s, err := New(config(cs, hs), m)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != Found || res.FirstBad != hs[23] {
			t.Fatalf("seed %d: %s %s (%s)", seed, res.Outcome, res.FirstBad, res.Why)
		}
		if last := res.Steps[len(res.Steps)-1]; last.Role != RoleConfirm || last.Verdict != "DIFFERENT" {
			t.Errorf("seed %d: culprit not confirmed: %+v", seed, last)
		}
	}
}

func TestNoRegression(t *testing.T) {
	cs, hs := simmeasure.Chain(40)
	m := &simmeasure.Measurer{Commits: cs, Base: 660, CV: 0.05, Rand: rand.New(rand.NewPCG(9, 9))}
	s, _ := New(config(cs, hs), m)
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != NoRegression || res.FirstBad != "" || !strings.Contains(res.Why, "no regression reproduced") {
		t.Fatalf("%s %s", res.Outcome, res.Why)
	}
	// Only the endpoints were measured.
	if len(res.Runs) != 2 {
		t.Errorf("measured %d revisions, want only the 2 endpoints", len(res.Runs))
	}
}

// TestUndecidedEndpoints: a change the noise hides at the repeat limit is
// neither "no regression" nor a bad endpoint called good: the session ends
// undecided, says the levels it could not resolve, and measures nothing else.
func TestUndecidedEndpoints(t *testing.T) {
	cs, hs := simmeasure.Chain(20)
	undecided := 0
	for seed := uint64(1); seed <= 6; seed++ {
		m := &simmeasure.Measurer{Commits: cs, Base: 400, Culprits: map[string]float64{hs[9]: 0.88}, CV: 0.45,
			Rand: rand.New(rand.NewPCG(seed, 3))}
		res := mustRun(t, config(cs, hs), m)
		ends := res.Steps[0]
		if ends.Role != RoleEndpoints || ends.Compare == nil {
			t.Fatalf("seed %d: first step %+v, want the endpoints' comparison", seed, ends)
		}
		// UNKNOWN leaning to a regression with an interval that reaches
		// -5%: undecided; one leaning the other way or excluding -5% is
		// an answer (no regression).
		sh := ends.Compare.Shift
		if (ends.Compare.Verdict == stats.Unknown && sh.Est < 0 && sh.Lo <= -0.05) != (res.Outcome == Undecided) {
			t.Fatalf("seed %d: endpoints %s, outcome %s (%s)", seed, ends.Compare.Verdict, res.Outcome, res.Why)
		}
		if res.Outcome != Undecided {
			continue
		}
		undecided++
		if v, ok := res.Verdicts[hs[len(hs)-1]]; ok || res.FirstBad != "" || len(res.Range) != 0 {
			t.Errorf("seed %d: undecided with bad's verdict %q (%v), first bad %q, range %v", seed, v, ok, res.FirstBad, res.Range)
		}
		if len(res.Runs) != 2 || len(res.Runs[hs[0]]) != 18 {
			t.Errorf("seed %d: %d revisions measured, %d runs of good; want the 2 endpoints at the repeat limit 18", seed, len(res.Runs), len(res.Runs[hs[0]]))
		}
		if !strings.Contains(res.Why, "good-bad shift") || !strings.Contains(res.Why, "noise per run") || !strings.Contains(res.Why, "repeat limit") {
			t.Errorf("seed %d: why without the levels: %s", seed, res.Why)
		}
	}
	if undecided == 0 {
		t.Fatal("a -12% change at 45% noise per run was resolved in 18 runs per side by every seed: the test does not test")
	}
}

func TestImprovementIsNotARegression(t *testing.T) {
	cs, hs := simmeasure.Chain(10)
	m := &simmeasure.Measurer{Commits: cs, Base: 500, Culprits: map[string]float64{hs[4]: 1.5}, CV: 0.03,
		Rand: rand.New(rand.NewPCG(1, 1))}
	s, _ := New(config(cs, hs), m)
	res, _ := s.Run(context.Background())
	if res.Outcome != NoRegression {
		t.Fatalf("faster bad: %s (%s)", res.Outcome, res.Why)
	}
}

func TestSkippedParentGivesRange(t *testing.T) {
	cs, hs := simmeasure.Chain(16)
	m := &simmeasure.Measurer{Commits: cs, Base: 660, Culprits: map[string]float64{hs[9]: 0.5}, CV: 0.03,
		Untestable: map[string]string{hs[8]: "server did not start"}, Rand: rand.New(rand.NewPCG(2, 2))}
	s, _ := New(config(cs, hs), m)
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != Ambiguous || len(res.Range) != 2 || res.Range[0] != hs[9] || res.Range[1] != hs[8] {
		t.Fatalf("%s %v (%s)", res.Outcome, res.Range, res.Why)
	}
	if res.Skipped[hs[8]] == "" {
		t.Error("the skip's reason is not recorded")
	}
	// An untestable commit is found when it is prepared: no runs of good or bad
	// are spent on it.
	for _, st := range res.Steps {
		if st.Commit == hs[8] && (st.Verdict != "skip" || st.Looks != 0) {
			t.Errorf("skip step %+v: want a skip before any block", st)
		}
	}
}

func TestUntestableEndpointStops(t *testing.T) {
	cs, hs := simmeasure.Chain(8)
	m := &simmeasure.Measurer{Commits: cs, Base: 660, CV: 0.03, Untestable: map[string]string{hs[0]: "build failed"},
		Rand: rand.New(rand.NewPCG(3, 3))}
	s, _ := New(config(cs, hs), m)
	_, err := s.Run(context.Background())
	var ee *EndpointError
	if err == nil || !asEndpoint(err, &ee) || ee.Which != "good" {
		t.Fatalf("want an EndpointError for good, got %v", err)
	}
}

func asEndpoint(err error, target **EndpointError) bool {
	e, ok := err.(*EndpointError)
	if ok {
		*target = e
	}
	return ok
}

func TestValidate(t *testing.T) {
	cs, hs := simmeasure.Chain(3)
	bad := []func(*Config){
		func(c *Config) { c.Repeats = 1 },
		func(c *Config) { c.MaxRepeats = 3 },
		func(c *Config) { c.Threshold = 0 },
		func(c *Config) { c.Confidence = 1 },
		func(c *Config) { c.Metric = "latency" },
		func(c *Config) { c.Repeats, c.MaxRepeats = 2, 4 }, // can never reach the budget's alpha
		func(c *Config) { c.Search = "binary" },
		func(c *Config) { c.Search, c.MaxRuns = SearchBayes, -1 },
	}
	for i, f := range bad {
		c := config(cs, hs)
		f(&c)
		if _, err := New(c, nil); err == nil {
			t.Errorf("case %d: want a validation error", i)
		}
	}
}

func TestKaryRoundsFindTheCulprit(t *testing.T) {
	cs, hs := simmeasure.Chain(40)
	for _, culprit := range []int{1, 9, 23, 40} {
		for seed := uint64(1); seed <= 3; seed++ {
			m := &simmeasure.Measurer{Commits: cs, Base: 660, Culprits: map[string]float64{hs[culprit]: 0.5}, CV: 0.05,
				Untestable: map[string]string{hs[12]: "build failed"}, Rand: rand.New(rand.NewPCG(seed, 11))}
			cfg := config(cs, hs)
			cfg.Jobs = 3
			var rounds int
			cfg.Hooks.Logf = func(format string, args ...any) {
				if format == "round: placing %d commits together" {
					rounds++
				}
			}
			s, err := New(cfg, m)
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != Found || res.FirstBad != hs[culprit] {
				t.Fatalf("culprit %d seed %d: %s %.10s (%s)", culprit, seed, res.Outcome, res.FirstBad, res.Why)
			}
			// 40 candidates, 4 parts per round: 3 rounds (one more for the skip).
			if rounds < 2 || rounds > 4 {
				t.Errorf("culprit %d seed %d: %d rounds, want 2-4", culprit, seed, rounds)
			}
			if s.budget.Steps != 3*3+3 {
				t.Errorf("budget of %d decisions, want 12", s.budget.Steps)
			}
		}
	}
}

func TestImprovementSearch(t *testing.T) {
	cs, hs := simmeasure.Chain(30)
	for _, improvement := range []bool{true, false} {
		m := &simmeasure.Measurer{Commits: cs, Base: 500, Culprits: map[string]float64{hs[17]: 1.6}, CV: 0.05,
			Rand: rand.New(rand.NewPCG(4, 4))}
		cfg := config(cs, hs)
		cfg.Improvement = improvement
		res := mustRun(t, cfg, m)
		switch {
		case improvement && (res.Outcome != Found || res.FirstBad != hs[17]):
			t.Errorf("improvement search: %s %.10s (%s)", res.Outcome, res.FirstBad, res.Why)
		case !improvement && (res.Outcome != NoRegression || !strings.Contains(res.Why, "no regression")):
			t.Errorf("regression search over a speed-up: %s (%s)", res.Outcome, res.Why)
		}
	}
}

func TestPartialChangeNoteRespectsTheThreshold(t *testing.T) {
	s := &Session{cfg: Config{Threshold: 0.05}}
	var small, large []stats.Block
	for i := 0; i < 8; i++ {
		d := float64(i % 3)
		// Candidate 1% below good: significant with no noise, but under 5%.
		small = append(small, stats.Block{Good: 600 + d, Bad: 200 + d, Cand: 594 + d})
		// Candidate 20% below good: a partial change worth saying.
		large = append(large, stats.Block{Good: 600 + d, Bad: 200 + d, Cand: 480 + d})
	}
	if cl := stats.Classify(small, 0.01); cl.Note == "" {
		t.Fatalf("Classify gave no note to a 1%% difference; the test needs one: %+v", cl)
	}
	if cl := s.placed(stats.Classify(small, 0.01)); cl.Note != "" || cl.Side != stats.GoodSide {
		t.Errorf("1%% off good: side %v note %q, want good without a note", cl.Side, cl.Note)
	}
	if cl := s.placed(stats.Classify(large, 0.01)); cl.Note == "" || cl.Side != stats.GoodSide {
		t.Errorf("20%% off good: side %v note %q, want good with a note", cl.Side, cl.Note)
	}
}

// crashOn fails the n-th run of each named commit and every retry of it, as
// the revision's fault (once: only the n-th).
type crashOn struct {
	*simmeasure.Measurer
	at   map[string]int
	runs map[string]int
	once bool
}

func (c *crashOn) Measure(ctx context.Context, commit string, runs int) ([]bisect.Run, error) {
	c.runs[commit]++
	if n, ok := c.at[commit]; ok && (c.runs[commit] == n || !c.once && c.runs[commit] > n && c.runs[commit] < n+3) {
		return nil, &bisect.UntestableError{Commit: commit, Reason: "server crashed"}
	}
	return c.Measurer.Measure(ctx, commit, runs)
}

func TestRoundWithTwoCrashesInOneBlockDecidesEachOnce(t *testing.T) {
	cs, hs := simmeasure.Chain(40)
	m := &simmeasure.Measurer{Commits: cs, Base: 660, Culprits: map[string]float64{hs[23]: 0.5}, CV: 0.03, Rand: rand.New(rand.NewPCG(1, 2))}
	cfg := config(cs, hs)
	cfg.Jobs = 3
	probe, _ := New(cfg, m)
	pts := probe.search.NextK(3)
	c := &crashOn{Measurer: m, at: map[string]int{pts[0]: 2, pts[1]: 2}, runs: map[string]int{}}
	s, _ := New(cfg, c)
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	decided := map[string][]Verdict{}
	for _, st := range res.Steps {
		if st.Role == RoleMidpoint {
			decided[st.Commit] = append(decided[st.Commit], st.Verdict)
		}
	}
	for _, h := range pts[:2] {
		if v := decided[h]; len(v) != 1 || v[0] != "skip" {
			t.Errorf("crashed %.10s...: decisions %v, want one skip", h[30:], v)
		}
	}
	if res.Outcome != Found || res.FirstBad != hs[23] {
		t.Errorf("%s %.10s (%s)", res.Outcome, res.FirstBad, res.Why)
	}
}

// A history that regresses at 10, recovers at 25 and regresses at 33 makes a
// round's verdicts contradict each other; the steps must carry the verdicts
// the search took, so that a log of them replays in git.
func TestRoundStepsCarryTheVerdictTheSearchTook(t *testing.T) {
	cs, hs := simmeasure.Chain(40)
	m := &simmeasure.Measurer{Commits: cs, Base: 660, Culprits: map[string]float64{hs[10]: 0.5, hs[25]: 2.0, hs[33]: 0.5}, CV: 0.03, Rand: rand.New(rand.NewPCG(3, 4))}
	cfg := config(cs, hs)
	cfg.Jobs = 3
	s, _ := New(cfg, m)
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	replay, _ := bisect.NewSearchOptions(cs, []string{hs[0]}, hs[40], bisect.Options{})
	contradicted := 0
	for _, st := range res.Steps {
		if st.Role != RoleMidpoint {
			continue
		}
		if string(st.Verdict) != res.Verdicts[st.Commit] {
			t.Errorf("step %.10s says %s, the search took %s", st.Commit[30:], st.Verdict, res.Verdicts[st.Commit])
		}
		mark, _ := st.Verdict.Mark()
		if !replay.Consistent(st.Commit, mark) {
			t.Errorf("step %.10s (%s) contradicts the steps before it", st.Commit[30:], st.Verdict)
		}
		replay.Mark(st.Commit, mark)
		if strings.Contains(st.Note, "contradicts") {
			contradicted++
		}
	}
	if contradicted == 0 {
		t.Error("no contradiction arose; the test's history no longer exercises it")
	}
}

func TestResumeMeasuresAFailedReferenceRunAgain(t *testing.T) {
	cs, hs := simmeasure.Chain(40)
	m := &simmeasure.Measurer{Commits: cs, Base: 660, Culprits: map[string]float64{hs[23]: 0.5}, CV: 0.03, Rand: rand.New(rand.NewPCG(1, 2))}
	var events []Event
	cfg := config(cs, hs)
	cfg.Hooks.Record = func(seq int, e Event) error { events = append(events, e); return nil }
	// The good endpoint's server dies in its 9th run and in the retries of it:
	// during the first midpoint (the endpoints take 6), not the revision's
	// lasting fault.
	s, _ := New(cfg, &crashOn{Measurer: m, at: map[string]int{hs[0]: 9}, runs: map[string]int{}})
	if _, err := s.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "reference") {
		t.Fatalf("first session: %v, want a reference failure", err)
	}
	for _, e := range events {
		if e.Reason != "" {
			t.Errorf("a reference's failure was recorded: %+v", e)
		}
	}
	cfg2 := config(cs, hs)
	cfg2.Replay = events
	s2, _ := New(cfg2, m)
	res, err := s2.Run(context.Background())
	if err != nil || res.Outcome != Found || res.FirstBad != hs[23] {
		t.Fatalf("resumed: %v %+v", err, res)
	}
	if res.Replayed != len(events) {
		t.Errorf("replayed %d of %d events", res.Replayed, len(events))
	}
}

// A server that dies once costs a retry, not the commit: the candidate is
// still placed, a reference's single failure does not stop the session, and
// the failed run is in the store (a resumed session replays the same retry).
func TestOneCrashIsRetried(t *testing.T) {
	cs, hs := simmeasure.Chain(40)
	m := &simmeasure.Measurer{Commits: cs, Base: 660, Culprits: map[string]float64{hs[23]: 0.5}, CV: 0.03, Rand: rand.New(rand.NewPCG(1, 2))}
	cfg := config(cs, hs)
	probe, _ := New(cfg, m)
	first, _ := probe.search.Next()
	var events []Event
	cfg.Hooks.Record = func(seq int, e Event) error { events = append(events, e); return nil }
	c := &crashOn{Measurer: m, at: map[string]int{first: 2, hs[0]: 9}, runs: map[string]int{}, once: true}
	s, _ := New(cfg, c)
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != Found || res.FirstBad != hs[23] || res.Verdicts[first] == "skip" {
		t.Errorf("%s %.10s, first midpoint %s (%s)", res.Outcome, res.FirstBad, res.Verdicts[first], res.Why)
	}
	if res.Retried != 2 {
		t.Errorf("retried %d runs, want 2", res.Retried)
	}
	failed := 0
	for _, e := range events {
		if e.Reason != "" {
			failed++
			if e.Commit != first {
				t.Errorf("a reference's failure was recorded: %+v", e)
			}
		}
	}
	if failed != 1 {
		t.Errorf("%d failed runs recorded, want the candidate's one", failed)
	}
	cfg2 := config(cs, hs)
	cfg2.Replay = events
	s2, _ := New(cfg2, m)
	res2, err := s2.Run(context.Background())
	if err != nil || res2.FirstBad != hs[23] || res2.Replayed != len(events) {
		t.Errorf("resumed: %v, replayed %d of %d", err, res2.Replayed, len(events))
	}
}

// Every metric finds the culprit in its own direction: latency percentiles
// and CPU per transaction rise where tps and qps fall.
func TestEveryMetricFindsTheCulprit(t *testing.T) {
	cs, hs := simmeasure.Chain(30)
	for _, metric := range Metrics {
		m := &simmeasure.Measurer{Commits: cs, Base: 660, Culprits: map[string]float64{hs[17]: 0.6}, CV: 0.03, Rand: rand.New(rand.NewPCG(5, 5))}
		cfg := config(cs, hs)
		cfg.Metric = metric
		s, err := New(cfg, m)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Run(context.Background())
		if err != nil || res.Outcome != Found || res.FirstBad != hs[17] {
			t.Errorf("--metric %s: %v %s %.10s (%s)", metric, err, res.Outcome, res.FirstBad, res.Why)
		}
		if v := metric.Value(res.Runs[hs[30]][0]); !(v > 0) {
			t.Errorf("--metric %s: value %v", metric, v)
		}
	}
	cfg := config(cs, hs)
	cfg.Metric = "p90"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "p99") {
		t.Errorf("--metric p90: %v", err)
	}
}

// Once skips have spent the error budget so far that --max-repeats cannot
// reach a midpoint's share, further midpoints are skipped unmeasured with the
// reason, instead of measured to the limit for nothing; the answer is a range.
func TestSpentBudgetSkipsWithoutMeasuring(t *testing.T) {
	cs, hs := simmeasure.Chain(200)
	cfg := config(cs, hs)
	cfg.Repeats, cfg.MaxRepeats = 4, 10
	// A culprit at the noise's size: midpoints stay undecided and skipped.
	m := &simmeasure.Measurer{Commits: cs, Base: 660, Culprits: map[string]float64{hs[120]: 0.85}, CV: 0.07, Rand: rand.New(rand.NewPCG(8, 8))}
	res := mustRun(t, cfg, m)
	spent, measured := 0, 0
	for _, st := range res.Steps {
		if st.Role != RoleMidpoint {
			continue
		}
		if strings.Contains(st.Reason, "error budget spent") {
			spent++
			if n := len(res.Runs[st.Commit]); n != 0 {
				t.Errorf("%.10s skipped for the budget after %d runs", st.Commit, n)
			}
		} else {
			measured++
		}
	}
	if res.Outcome == Found && res.FirstBad != hs[120] {
		t.Errorf("wrong culprit %.10s", res.FirstBad)
	}
	t.Logf("%s; %d midpoints measured, %d skipped unmeasured, %d runs", res.Outcome, measured, spent, m.Calls)
	if res.Outcome == NoRegression {
		t.Fatal("endpoints did not differ with this seed; the test needs a bisection")
	}
	if spent == 0 {
		t.Error("no midpoint was skipped for the spent budget; the test no longer exercises it")
	}
}

// TestAdjacentEndpointsAreNotConfirmedTwice: when good is bad's parent, the
// endpoints' comparison is the culprit's confirmation; the pair is not
// measured again.
func TestAdjacentEndpointsAreNotConfirmedTwice(t *testing.T) {
	cs, hs := simmeasure.Chain(1)
	m := &simmeasure.Measurer{Commits: cs, Base: 500, Culprits: map[string]float64{hs[1]: 0.7}, CV: 0.02, Rand: rand.New(rand.NewPCG(1, 2))}
	s, err := New(config(cs, hs), m)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background())
	if err != nil || res.Outcome != Found || res.FirstBad != hs[1] {
		t.Fatalf("%v %+v", err, res)
	}
	for _, st := range res.Steps {
		if st.Role == RoleConfirm {
			t.Errorf("a confirmation step was taken: %+v", st)
		}
	}
	ends := len(res.Runs[hs[0]]) + len(res.Runs[hs[1]])
	if m.Calls != ends || !strings.Contains(res.Why, "by the endpoints' comparison") {
		t.Errorf("%d runs measured, %d by the endpoints; why %q", m.Calls, ends, res.Why)
	}
}

// mustRun runs a session of cfg on m to its end; a configuration or run
// error fails the test.
func mustRun(t *testing.T, cfg Config, m bisect.Measurer) *Result {
	t.Helper()
	s, err := New(cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestSettingNames: the session names its settings as they are, and as the
// caller spells them when Hooks.Setting is set (the command line's flags).
func TestSettingNames(t *testing.T) {
	cs, hs := simmeasure.Chain(8)
	for _, tc := range []struct {
		setting func(string) string
		want    string
	}{
		{nil, "not confirmed against the parent: no-confirm"},
		{func(n string) string { return "--" + n }, "not confirmed against the parent: --no-confirm"},
	} {
		m := &simmeasure.Measurer{Commits: cs, Base: 600, Culprits: map[string]float64{hs[5]: 0.5}, CV: 0.03,
			Rand: rand.New(rand.NewPCG(4, 4))}
		cfg := config(cs, hs)
		cfg.NoConfirm, cfg.Hooks.Setting = true, tc.setting
		res := mustRun(t, cfg, m)
		if res.Outcome != Found || !strings.HasSuffix(res.Why, tc.want) {
			t.Errorf("%s: why %q, want it to end %q", res.Outcome, res.Why, tc.want)
		}
	}
}
