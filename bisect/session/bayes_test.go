package session

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/simmeasure"
)

// bayesConfig is the probabilistic search's policy of these tests.
func bayesConfig(n int) (Config, []string) {
	cs, hs := simmeasure.Chain(n)
	return Config{Good: hs[0], Bad: hs[n], Commits: cs, Repeats: 6, MaxRepeats: BayesEndpointRuns,
		Threshold: 0.01, Confidence: 0.99, Metric: TPS, BuildRuns: 10}, hs
}

// TestBayesNamesASmallCulprit: -5% at 3% noise (1.7 noise units), which the
// classic search leaves as a range, named exactly; its posterior is in the
// result, and every measured commit has a step with its verdict.
func TestBayesNamesASmallCulprit(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		cfg, hs := bayesConfig(40)
		m := &simmeasure.Measurer{Commits: cfg.Commits, Base: 800, Culprits: map[string]float64{hs[27]: 0.95}, CV: 0.03, Rand: rand.New(rand.NewPCG(seed, 1))}
		s, err := New(cfg, m)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Run(context.Background())
		if err != nil || res.Outcome != Found || res.FirstBad != hs[27] {
			t.Fatalf("seed %d: %v %s %s (%s)", seed, err, res.Outcome, res.FirstBad, res.Why)
		}
		if m.Calls > 250 {
			t.Errorf("seed %d: %d runs", seed, m.Calls)
		}
		var culprit *Posterior
		for i := range res.Posterior {
			if res.Posterior[i].Commit == hs[27] {
				culprit = &res.Posterior[i]
			}
		}
		if len(res.Posterior) != 40 || culprit == nil || culprit.First < 0.99 || culprit.Runs < 2 || !(culprit.Lo < 1 && culprit.Hi > 0.5) {
			t.Errorf("seed %d: posterior of the culprit %+v (of %d)", seed, culprit, len(res.Posterior))
		}
		if res.Verdicts[hs[27]] != "bad" || res.Verdicts[hs[26]] != "good" && len(res.Runs[hs[26]]) > 0 {
			t.Errorf("seed %d: verdicts culprit %q parent %q", seed, res.Verdicts[hs[27]], res.Verdicts[hs[26]])
		}
		steps := 0
		for _, st := range res.Steps {
			if st.Role == RoleMidpoint {
				steps++
				if !strings.HasPrefix(st.Reason, "posterior: ") {
					t.Errorf("seed %d: step %+v", seed, st)
				}
			}
		}
		if steps != len(res.Runs)-2 {
			t.Errorf("seed %d: %d midpoint steps for %d measured candidates", seed, steps, len(res.Runs)-2)
		}
	}
}

// TestBayesRoundsOfTwo: --jobs 2 places two commits per round and still ends
// (a decided commit is not run again for nothing).
func TestBayesRoundsOfTwo(t *testing.T) {
	cfg, hs := bayesConfig(30)
	cfg.Jobs = 2
	m := &simmeasure.Measurer{Commits: cfg.Commits, Base: 800, Culprits: map[string]float64{hs[11]: 0.6}, CV: 0.03, Rand: rand.New(rand.NewPCG(3, 3))}
	s, _ := New(cfg, m)
	res, err := s.Run(context.Background())
	if err != nil || res.FirstBad != hs[11] || m.Calls > 120 {
		t.Fatalf("%v: %s %s after %d runs (%s)", err, res.Outcome, res.FirstBad, m.Calls, res.Why)
	}
}

// TestBayesUntestableParentGivesRange: the culprit's parent does not build:
// nothing tells the two apart, the answer is the pair.
func TestBayesUntestableParentGivesRange(t *testing.T) {
	cfg, hs := bayesConfig(20)
	m := &simmeasure.Measurer{Commits: cfg.Commits, Base: 800, Culprits: map[string]float64{hs[13]: 0.8}, CV: 0.03,
		Untestable: map[string]string{hs[12]: "build failed", hs[4]: "build failed"}, Rand: rand.New(rand.NewPCG(4, 4))}
	s, _ := New(cfg, m)
	res, err := s.Run(context.Background())
	if err != nil || res.Outcome != Ambiguous || strings.Join(res.Range, " ") != hs[13]+" "+hs[12] {
		t.Fatalf("%v: %s %v (%s)", err, res.Outcome, res.Range, res.Why)
	}
	if !strings.Contains(res.Skipped[hs[12]], "build failed") {
		t.Errorf("skipped: %v", res.Skipped)
	}
}

// TestBayesAdjacentEndpoints: good is bad's parent: the endpoints' runs name
// bad without another run.
func TestBayesAdjacentEndpoints(t *testing.T) {
	cfg, hs := bayesConfig(1)
	m := &simmeasure.Measurer{Commits: cfg.Commits, Base: 500, Culprits: map[string]float64{hs[1]: 0.7}, CV: 0.02, Rand: rand.New(rand.NewPCG(1, 2))}
	s, _ := New(cfg, m)
	res, err := s.Run(context.Background())
	if err != nil || res.Outcome != Found || res.FirstBad != hs[1] || m.Calls != len(res.Runs[hs[0]])+len(res.Runs[hs[1]]) {
		t.Fatalf("%v %s %s, %d runs", err, res.Outcome, res.FirstBad, m.Calls)
	}
}

// TestBayesImprovement: looking for the first new (faster) commit.
func TestBayesImprovement(t *testing.T) {
	cfg, hs := bayesConfig(20)
	cfg.Improvement = true
	m := &simmeasure.Measurer{Commits: cfg.Commits, Base: 500, Culprits: map[string]float64{hs[7]: 1.3}, CV: 0.03, Rand: rand.New(rand.NewPCG(2, 2))}
	s, _ := New(cfg, m)
	res, err := s.Run(context.Background())
	if err != nil || res.FirstBad != hs[7] || !strings.Contains(res.Why, "first new commit") || strings.Contains(res.Why, "first bad") {
		t.Fatalf("%v %s %s (%s)", err, res.Outcome, res.FirstBad, res.Why)
	}
}

// TestBayesReplayIsExact: a session given every event of an earlier one
// measures nothing and reaches the same answer (resume is deterministic).
func TestBayesReplayIsExact(t *testing.T) {
	cfg, hs := bayesConfig(30)
	cfg.BuildRuns = 0 // measured: the stored prepare times must be what the replay uses
	// Builds of 30ms against runs of 1ms: a build costs 30 runs, so the
	// choice between built and new commits depends on the times.
	var events []Event
	cfg.Hooks.Record = func(seq int, e Event) error { events = append(events, e); return nil }
	m := &slowBuilds{&simmeasure.Measurer{Commits: cfg.Commits, Base: 800, Culprits: map[string]float64{hs[17]: 0.94}, CV: 0.03, Rand: rand.New(rand.NewPCG(9, 9))}}
	s, _ := New(cfg, m)
	first, err := s.Run(context.Background())
	if err != nil || first.Outcome != Found {
		t.Fatalf("%v %s", err, first.Why)
	}
	cfg.Hooks.Record = nil
	cfg.Replay = events
	m2 := &slowBuilds{&simmeasure.Measurer{Commits: cfg.Commits, Base: 800, Culprits: map[string]float64{hs[17]: 0.94}, CV: 0.03, Rand: rand.New(rand.NewPCG(1, 1))}}
	s2, _ := New(cfg, m2)
	again, err := s2.Run(context.Background())
	if err != nil || again.FirstBad != first.FirstBad || m2.Calls != 0 || again.Replayed != len(events) {
		t.Fatalf("replay: %v %s, %d live runs, %d of %d replayed", err, again.FirstBad, m2.Calls, again.Replayed, len(events))
	}
}

// slowBuilds is a simulated measurer whose prepares take 30ms and whose runs
// say they took 1ms of wall time.
type slowBuilds struct{ *simmeasure.Measurer }

func (m *slowBuilds) Prepare(ctx context.Context, commit string) error {
	time.Sleep(30 * time.Millisecond)
	return m.Measurer.Prepare(ctx, commit)
}

func (m *slowBuilds) Measure(ctx context.Context, commit string, runs int) ([]bisect.Run, error) {
	rs, err := m.Measurer.Measure(ctx, commit, runs)
	for i := range rs {
		rs[i].Wall = time.Millisecond
	}
	return rs, err
}

// TestSmallestChangeIsResolved: the pre-flight's smallest resolvable change
// is what sessions resolve within the run limit: simulated sessions at that
// change (3% noise, 40 commits, the change SmallestChange gives for 400 runs,
// with --max-runs 400) name the culprit in nearly all of them; and the figure
// moves the right way with the runs and the noise.
func TestSmallestChangeIsResolved(t *testing.T) {
	const noise, limit = 0.03, 400
	sc := SmallestChange(noise, 40, 0.99, limit)
	if sc < 0.02 || sc > 0.08 {
		t.Fatalf("smallest change at 3%% noise in %d runs: %.2f%%", limit, 100*sc)
	}
	if more := SmallestChange(noise, 40, 0.99, 4*limit); !(more < sc) || SmallestChange(2*noise, 40, 0.99, limit) <= sc || SmallestChange(0, 40, 0.99, limit) != 0 {
		t.Errorf("not monotone: %.2f%% in %d runs, %.2f%% in %d", 100*sc, limit, 100*more, 4*limit)
	}
	found, runs := 0, 0
	const sessions = 24
	for seed := uint64(1); seed <= sessions; seed++ {
		cfg, hs := bayesConfig(40)
		cfg.MaxRuns = limit
		pos := 1 + int(seed*7)%40
		m := &simmeasure.Measurer{Commits: cfg.Commits, Base: 800, Culprits: map[string]float64{hs[pos]: 1 / (1 + sc)}, CV: noise, Rand: rand.New(rand.NewPCG(seed, 3))}
		res := mustRun(t, cfg, m)
		if res.Outcome == Found && res.FirstBad == hs[pos] {
			found++
		} else if res.Outcome == Found {
			t.Errorf("seed %d: named %s, culprit %s", seed, res.FirstBad, hs[pos])
		}
		runs += m.Calls
		if res.SmallestChange <= 0 || res.SmallestChangeRuns != limit || !strings.Contains(res.Estimate, "smallest change") {
			t.Errorf("seed %d: smallest change %v in %d runs (estimate %q)", seed, res.SmallestChange, res.SmallestChangeRuns, res.Estimate)
		}
	}
	t.Logf("%.2f%% at 3%% noise, at most %d runs: %d of %d named, %.0f runs per session", 100*sc, limit, found, sessions, float64(runs)/sessions)
	if found < sessions*8/10 {
		t.Errorf("at the smallest change %.2f%% and --max-runs %d: %d of %d named exactly (want about 9 in 10)", 100*sc, limit, found, sessions)
	}
}

// TestNoiseUpper: the chi-square bound of a standard deviation's one-sided
// 90% interval, at the degrees of freedom the endpoints give.
func TestNoiseUpper(t *testing.T) {
	for df, want := range map[int]float64{10: 1.434, 34: 1.19, 198: 1.07} {
		if got := NoiseUpper(df); math.Abs(got-want) > 0.01 {
			t.Errorf("NoiseUpper(%d) = %.3f, want %.3f", df, got, want)
		}
	}
	if NoiseUpper(0) != 2 || !(NoiseUpper(4) > NoiseUpper(10)) {
		t.Errorf("NoiseUpper(0) %.2f, (4) %.2f, (10) %.2f: want 2, then falling", NoiseUpper(0), NoiseUpper(4), NoiseUpper(10))
	}
}

// TestHeadToHeadRefutes: the culprit's first runs measure at the good level
// (a neighbour nothing saw), so the posterior first names its child. Put
// head to head with fresh runs, the child shows no step against the
// culprit: it is not named, and the search goes on to the culprit, which
// passes. With --no-confirm the child is named: the head-to-head is what
// keeps the wrong name out.
func TestHeadToHeadRefutes(t *testing.T) {
	for _, noConfirm := range []bool{true, false} {
		cfg, hs := bayesConfig(12)
		culprit, child := hs[6], hs[7]
		m := &simmeasure.Measurer{Commits: cfg.Commits, Base: 600, Culprits: map[string]float64{culprit: 0.85}, CV: 0.03,
			Transient: map[string]float64{culprit: 1 / 0.85}, TransientRuns: 4, Rand: rand.New(rand.NewPCG(11, 3))}
		cfg.NoConfirm = noConfirm
		res := mustRun(t, cfg, m)
		var confirms []string
		for _, st := range res.Steps {
			if st.Role == RoleConfirm {
				confirms = append(confirms, fmt.Sprintf("%.3s vs %.3s: %s", st.Commit[37:], st.Against[37:], st.Verdict))
			}
		}
		t.Logf("no-confirm %v: %s %.3s after %d runs, %q: %s", noConfirm, res.Outcome, res.FirstBad[37:], m.Calls, confirms, res.Why)
		if noConfirm {
			if res.FirstBad != child || len(confirms) != 0 {
				t.Fatalf("--no-confirm: %s %.3s, head-to-heads %q: want the child named untested (the case this test is about)", res.Outcome, res.FirstBad, confirms)
			}
			continue
		}
		if res.Outcome != Found || res.FirstBad != culprit || len(confirms) != 2 || !strings.Contains(res.Why, "head to head") {
			t.Errorf("%s %.3s (%s), head-to-heads %q: want the culprit named after the child was refuted", res.Outcome, res.FirstBad, res.Why, confirms)
		}
	}
	// A run limit the head-to-head would pass: it is not begun, and the
	// answer is a range that says why.
	cfg, hs := bayesConfig(12)
	m := &simmeasure.Measurer{Commits: cfg.Commits, Base: 600, Culprits: map[string]float64{hs[6]: 0.85}, CV: 0.03, Rand: rand.New(rand.NewPCG(11, 3))}
	cfg.MaxRuns = 30
	res := mustRun(t, cfg, m)
	if m.Calls > cfg.MaxRuns || res.Outcome != Ambiguous || !strings.Contains(res.Why, "run limit") {
		t.Errorf("--max-runs 30: %d runs, %s (%s): want at most 30 runs and a range for the run limit", m.Calls, res.Outcome, res.Why)
	}
}

// TestHostsReplayAndLevels: three runner hosts of speeds 1, 0.85 and 0.7
// (the slowest 12 noise units below the fastest) name a -6% culprit at 3%
// noise; every host measured references of both sides and candidates;
// the endpoints' comparison saw the shift, not the hosts' spread; and a
// session given every event measures nothing and reaches the same answer,
// each run on the host that took it.
func TestHostsReplayAndLevels(t *testing.T) {
	cfg, hs := bayesConfig(30)
	cfg.Hosts = []string{"a", "b", "c"}
	var events []Event
	cfg.Hooks.Record = func(seq int, e Event) error { events = append(events, e); return nil }
	sim := func(seed uint64) *simmeasure.Measurer {
		return &simmeasure.Measurer{Commits: cfg.Commits, Base: 800, Culprits: map[string]float64{hs[11]: 0.94}, CV: 0.03,
			Hosts: map[string]float64{"a": 1, "b": 0.85, "c": 0.7}, Rand: rand.New(rand.NewPCG(seed, 3))}
	}
	s, err := New(cfg, sim(4))
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.Run(context.Background())
	if err != nil || first.Outcome != Found || first.FirstBad != hs[11] {
		t.Fatalf("%v %s %.6s: %s", err, first.Outcome, first.FirstBad, first.Why)
	}
	refs, cands := map[string]int{}, map[string]int{}
	for c, runs := range first.Runs {
		for _, r := range runs {
			if c == cfg.Good || c == cfg.Bad {
				refs[r.Host+" "+map[bool]string{true: "good", false: "bad"}[c == cfg.Good]]++
			} else {
				cands[r.Host]++
			}
		}
	}
	for _, h := range cfg.Hosts {
		if refs[h+" good"] < 2 || refs[h+" bad"] < 2 || cands[h] == 0 {
			t.Errorf("host %s: %d good and %d bad references, %d candidate runs", h, refs[h+" good"], refs[h+" bad"], cands[h])
		}
	}
	// The regression's size per host is in the answer: the same -6% on
	// every host here, whatever its speed.
	m := regexp.MustCompile(`shift per host: a ([-+0-9.]+)%, b ([-+0-9.]+)%, c ([-+0-9.]+)%`).FindStringSubmatch(first.Why)
	if m == nil {
		t.Errorf("the answer has no shift per host: %s", first.Why)
	} else {
		for _, v := range m[1:] {
			if f, _ := strconv.ParseFloat(v, 64); math.Abs(f+6) > 3 {
				t.Errorf("a host's shift %s%%, want about -6%%: %s", v, m[0])
			}
		}
	}
	ends := first.Steps[0]
	if ends.Role != RoleEndpoints || ends.Compare == nil || math.Abs(ends.Compare.Shift.Est+0.06) > 0.025 {
		t.Errorf("endpoints: %+v, want a shift near -6%%", ends.Compare)
	}
	cfg.Hooks.Record = nil
	cfg.Replay = events
	m2 := sim(99)
	s2, _ := New(cfg, m2)
	again, err := s2.Run(context.Background())
	if err != nil || again.FirstBad != first.FirstBad || m2.Calls != 0 || again.Replayed != len(events) {
		t.Fatalf("replay: %v %s, %d live runs, %d of %d replayed", err, again.FirstBad, m2.Calls, again.Replayed, len(events))
	}

	// Runner hosts need the probabilistic search and a measurer of hosts.
	c := cfg
	c.Replay, c.Search = nil, SearchClassic
	if _, err := New(c, sim(1)); err == nil || !strings.Contains(err.Error(), "probabilistic") {
		t.Errorf("classic search with hosts: %v", err)
	}
	c.Search, c.Hosts = SearchBayes, []string{"a", "a"}
	if _, err := New(c, sim(1)); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a host given twice: %v", err)
	}
}
