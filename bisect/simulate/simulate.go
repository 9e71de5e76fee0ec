// Package simulate drives the real session (search and decisions) with the
// simulated measurer of package simmeasure over many sessions and counts how often the
// answer is right: the evidence behind the statistical claims of
// docs/statistics.md (its simulation tables).
package simulate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/simmeasure"
)

// Scenario is one kind of history and machine.
type Scenario struct {
	Commits     int     // commits after good; the last is bad
	CulpritPos  int     // 1..Commits; 0 = nothing regressed
	Factor      float64 // throughput factor of the culprit (0.6 = 40% slower)
	CV          float64 // per-run noise (scale of simmeasure.Measurer.Noise; the log-normal CV)
	Noise       string  // simmeasure.Measurer.Noise: "" (log-normal), normal, t3, outliers
	DriftPerRun float64 // relative change of the machine's speed per run
	StepAt      int     // from this run on the machine's speed is StepFactor times (0: never)
	StepFactor  float64
	Flaky       float64 // probability that a run fails once through no fault of the revision
	BuildEffect float64 // spread of a per-build level (simmeasure.Measurer.BuildEffect), on a log scale
	Layouts     int     // layouts per build (simmeasure.Measurer.Layouts; LayoutPerRun: one per run)
	Broken      []int   // positions that do not build
	// Culprit2Pos and Factor2 add a second, usually smaller, culprit (0: none).
	Culprit2Pos int
	Factor2     float64
	// RandomPos draws the culprit's position per session, uniformly from 1
	// to Commits (CulpritPos is then ignored, except that 0 still means
	// nothing regressed).
	RandomPos bool
	// Merges makes the history one with side branches (simmeasure.Merges) instead
	// of a line.
	Merges bool
	// HostSpeeds, with two or more, are runner hosts of those speeds (a
	// host's runs are its speed times the level; a build there takes
	// SimBuildRuns over its speed): the session places a commit per host
	// per round (session.Config.Hosts), each host measuring its own
	// references.
	HostSpeeds []float64
}

// HostName is the name of the simulated runner host i (0-based).
func HostName(i int) string { return fmt.Sprintf("host%d", i+1) }

// Summary counts the outcomes of many sessions of a scenario.
type Summary struct {
	Sessions     int
	Correct      int // named the culprit (with two, the first on the path from good), or, without one, said no regression
	WrongCulprit int // named a commit that is not a culprit (a false culprit when there is none)
	NoRegression int // said no regression (or undecided endpoints) although there was one (a miss; an improvement, Factor > 1, always ends here)
	Ambiguous    int // answered with a range (with a culprit in the history)
	FalseAlarm   int // nothing regressed, yet the answer was a range
	Errors       int
	FirstError   string // the first session error, for a message
	RangeHolds   int    // ambiguous answers whose range contains a culprit (the others are wrong answers)
	Second       int    // with two culprits: named the second one (counted as a wrong culprit)

	MeanRuns, P95Runs float64 // runs per session (failed runs included)
	// MeanWall and P95Wall are a session's time in runs' time: the hosts
	// run side by side, a round waits for its slowest host, a build takes
	// SimBuildRuns runs on a host of speed 1 (once, on the first host that
	// runs the commit: the others fetch it from a shared build cache).
	MeanWall, P95Wall   float64
	MeanBuilt, P95Built float64 // distinct commits prepared (built) per session
	// MeanCost is the mean of runs + builds x SimBuildRuns per session: what
	// a session costs in runs when a build takes SimBuildRuns runs' time.
	MeanCost float64
	Retried  int // runs retried after a flaky failure, over all sessions
	// Estimated is the number of sessions that made a pre-flight estimate;
	// EstWithin of them spent within a factor 1.5 of it, and EstRatio is the
	// median of spent/estimated runs. EstHigh sessions made an upper figure
	// too (Result.EstimatedRunsHigh: the probabilistic search), EstUnderHigh
	// of them spent at most that.
	Estimated, EstWithin, EstHigh, EstUnderHigh int
	EstRatio                                    float64
	EstHighP90                                  float64 // 90th percentile of spent / the upper figure
}

// Wrong is the number of wrong answers: a wrong culprit, a range without a
// culprit, a range that misses the culprit.
func (s Summary) Wrong() int { return s.WrongCulprit + s.FalseAlarm + s.Ambiguous - s.RangeHolds }

// Rate is n as a fraction of the sessions.
func (s Summary) Rate(n int) float64 { return float64(n) / float64(s.Sessions) }

// String renders the summary as one line of rates.
func (s Summary) String() string {
	out := fmt.Sprintf("%d sessions: correct %.1f%%, wrong culprit %.1f%%, false alarm (range without a culprit) %.1f%%, missed (no regression or undecided endpoints) %.1f%%, ambiguous %.1f%% (culprit in range %d of %d), errors %d; runs per session mean %.0f, p95 %.0f; commits built mean %.1f, p95 %.0f; cost (runs + %d per build) mean %.0f",
		s.Sessions, 100*s.Rate(s.Correct), 100*s.Rate(s.WrongCulprit), 100*s.Rate(s.FalseAlarm), 100*s.Rate(s.NoRegression),
		100*s.Rate(s.Ambiguous), s.RangeHolds, s.Ambiguous, s.Errors, s.MeanRuns, s.P95Runs, s.MeanBuilt, s.P95Built, SimBuildRuns, s.MeanCost)
	out += fmt.Sprintf("; wall time (in runs, builds included) mean %.0f, p95 %.0f", s.MeanWall, s.P95Wall)
	if s.Second > 0 {
		out += fmt.Sprintf("; named the second culprit %d times", s.Second)
	}
	if s.Estimated > 0 {
		out += fmt.Sprintf("; runs spent / pre-flight estimate: median %.2f, within 1.5x in %.1f%%", s.EstRatio, 100*float64(s.EstWithin)/float64(s.Estimated))
		if s.EstHigh > 0 {
			out += fmt.Sprintf(", at most its upper figure in %.1f%% (90th percentile of spent / upper figure %.2f)", 100*float64(s.EstUnderHigh)/float64(s.EstHigh), s.EstHighP90)
		}
	}
	if s.Retried > 0 {
		out += fmt.Sprintf("; %d flaky runs retried", s.Retried)
	}
	if s.Errors > 0 {
		out += "; first error: " + s.FirstError
	}
	return out
}

// outcome is what one simulated session contributes to a Summary (small:
// the sessions' results are not kept).
type outcome struct {
	err                error
	kind               int // one of the outcome kinds below
	second, holds      bool
	runs, built, retry int
	wall               float64 // the session's time in runs (simmeasure.Measurer.Wall)
	estimated          int     // the pre-flight estimate of runs (0: none)
	estimatedHigh      int     // its upper figure (0: none)
}

// Outcome kinds.
const (
	kCorrect = iota
	kWrongCulprit
	kNoRegression
	kAmbiguous
	kFalseAlarm
	kError
)

// SimBuildRuns is what a simulated build costs in runs (a real tree builds in
// minutes, a run takes about one): the probabilistic search weighs it when it
// chooses between a commit already built and a new one.
const SimBuildRuns = 10

// MaxSessions bounds the sessions of one run (memory: a few dozen bytes each).
const MaxSessions = 1000000

// RunContext simulates sessions sessions of sc with the session policy of cfg
// (Good, Bad and Commits are filled in), seeded with seed, on workers
// goroutines (at least 1), and stops when ctx is done, returning ctx's error
// with the summary of the sessions done. Session i uses the generator
// PCG(seed, i), so a summary does not depend on how many goroutines ran it.
// sessions is capped at MaxSessions.
func RunContext(ctx context.Context, sc Scenario, cfg session.Config, sessions int, seed uint64, workers int) (Summary, error) {
	sessions = min(sessions, MaxSessions)
	commits, hashes := simmeasure.Chain(sc.Commits)
	if sc.Merges {
		commits, hashes = simmeasure.Merges(sc.Commits)
	}
	cfg.Good, cfg.Bad, cfg.Commits = hashes[0], hashes[sc.Commits], commits
	cfg.Hooks = session.Hooks{}
	if cfg.BuildRuns == 0 {
		cfg.BuildRuns = SimBuildRuns
	}
	cfg.Hosts = nil
	if len(sc.HostSpeeds) > 1 {
		for i := range sc.HostSpeeds {
			cfg.Hosts = append(cfg.Hosts, HostName(i))
		}
	}
	h := history{sc: sc, cfg: cfg, commits: commits, hashes: hashes, seed: seed}
	outs := make([]outcome, sessions)
	workers = max(workers, 1)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				outs[i] = h.session(ctx, i)
			}
		}()
	}
	done := sessions
feed:
	for i := 0; i < sessions; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			done = i
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return summarize(outs[:done]), err
	}
	return summarize(outs), nil
}

// history is a scenario's simulated history, which every session of it
// bisects with the policy cfg.
type history struct {
	sc      Scenario
	cfg     session.Config
	commits []bisect.Commit
	hashes  []string // by position: 0 good, sc.Commits bad
	seed    uint64
}

// session simulates session i: its culprits, its measurer (generator
// PCG(seed, i)), the search, and how its answer compares with the truth.
func (h history) session(ctx context.Context, i int) outcome {
	m, culprit, second, either := h.measurer(i)
	s, err := session.New(h.cfg, m)
	if err != nil {
		return outcome{err: err, kind: kError}
	}
	res, err := s.Run(ctx)
	built := map[string]bool{}
	for _, p := range m.Prepared {
		built[p] = true
	}
	o := outcome{err: err, runs: m.Calls, built: len(built), retry: res.Retried, wall: m.Wall()}
	if err == nil {
		o.estimated, o.estimatedHigh = res.EstimatedRuns, res.EstimatedRunsHigh
	}
	o.kind, o.second, o.holds = judgeAnswer(res, err, culprit, second, either)
	return o
}

// measurer is session i's simulated measurer, with its culprit (and second
// culprit, "" for none) as the right answer sees them: with two, culprit is
// the first on the path from good (the ancestor of the other), and either
// says neither is an ancestor of the other (both are right).
func (h history) measurer(i int) (m *simmeasure.Measurer, culprit, second string, either bool) {
	sc := h.sc
	if sc.CulpritPos > 0 {
		pos := sc.CulpritPos
		if sc.RandomPos {
			pos = 1 + rand.New(rand.NewPCG(h.seed^0x5eed, uint64(i))).IntN(sc.Commits)
		}
		culprit = h.hashes[pos]
	}
	if sc.Culprit2Pos > 0 {
		second = h.hashes[sc.Culprit2Pos]
	}
	m = &simmeasure.Measurer{Commits: h.commits, Base: 1000, CV: sc.CV, Noise: sc.Noise, DriftPerRun: sc.DriftPerRun,
		StepAt: sc.StepAt, StepFactor: sc.StepFactor, Flaky: sc.Flaky, BuildEffect: sc.BuildEffect, Layouts: sc.Layouts,
		Culprits: map[string]float64{}, Untestable: map[string]string{}, Rand: rand.New(rand.NewPCG(h.seed, uint64(i))),
		BuildRuns: h.cfg.BuildRuns}
	if len(sc.HostSpeeds) > 1 {
		m.Hosts = map[string]float64{}
		for i, sp := range sc.HostSpeeds {
			m.Hosts[HostName(i)] = sp
		}
	}
	if culprit != "" {
		m.Culprits[culprit] = sc.Factor
	}
	if second != "" {
		if f, ok := m.Culprits[second]; ok {
			m.Culprits[second] = f * sc.Factor2 // the same commit twice: the effects combine
		} else {
			m.Culprits[second] = sc.Factor2
		}
	}
	for _, b := range sc.Broken {
		m.Untestable[h.hashes[b]] = "build failed"
	}
	if culprit != "" && second != "" && second != culprit {
		switch {
		case m.Contains(culprit, second):
			culprit, second = second, culprit
		case !m.Contains(second, culprit):
			either = true
		}
	}
	if second == culprit {
		second = ""
	}
	return m, culprit, second, either
}

// judgeAnswer is what a session's answer was against the truth: its kind,
// whether a wrong culprit was the second one, and whether an ambiguous
// range holds a culprit.
func judgeAnswer(res *session.Result, err error, culprit, second string, either bool) (kind int, isSecond, holds bool) {
	right := func(h string) bool { return h != "" && (h == culprit || either && h == second) }
	isCulprit := func(h string) bool { return h != "" && (h == culprit || h == second) }
	switch {
	case err != nil:
		return kError, false, false
	case res.Outcome == session.Found && right(res.FirstBad):
		return kCorrect, false, false
	case res.Outcome == session.Found:
		return kWrongCulprit, res.FirstBad == second, false
	// Undecided endpoints name nothing, as no regression does: right
	// when nothing regressed, a miss otherwise.
	case (res.Outcome == session.NoRegression || res.Outcome == session.Undecided) && culprit == "" && second == "":
		return kCorrect, false, false
	case res.Outcome == session.NoRegression || res.Outcome == session.Undecided:
		return kNoRegression, false, false
	case res.Outcome == session.Ambiguous && culprit == "" && second == "":
		return kFalseAlarm, false, false
	}
	return kAmbiguous, false, slices.ContainsFunc(res.Range, isCulprit)
}

func summarize(outs []outcome) Summary {
	sum := Summary{Sessions: len(outs)}
	var runs, walls, built, ratios, highRatios []float64
	for _, o := range outs {
		if o.kind == kError {
			sum.Errors++
			if sum.FirstError == "" && o.err != nil {
				sum.FirstError = o.err.Error()
			}
			continue
		}
		runs = append(runs, float64(o.runs))
		walls = append(walls, o.wall)
		built = append(built, float64(o.built))
		sum.Retried += o.retry
		if o.estimated > 0 {
			sum.Estimated++
			r := float64(o.runs) / float64(o.estimated)
			ratios = append(ratios, r)
			if r <= 1.5 && r >= 1/1.5 {
				sum.EstWithin++
			}
			if o.estimatedHigh > 0 {
				sum.EstHigh++
				highRatios = append(highRatios, float64(o.runs)/float64(o.estimatedHigh))
				if o.runs <= o.estimatedHigh {
					sum.EstUnderHigh++
				}
			}
		}
		switch o.kind {
		case kCorrect:
			sum.Correct++
		case kWrongCulprit:
			sum.WrongCulprit++
			if o.second {
				sum.Second++
			}
		case kNoRegression:
			sum.NoRegression++
		case kFalseAlarm:
			sum.FalseAlarm++
		case kAmbiguous:
			sum.Ambiguous++
			if o.holds {
				sum.RangeHolds++
			}
		}
	}
	sum.MeanRuns, sum.P95Runs = meanP95(runs)
	sum.MeanWall, sum.P95Wall = meanP95(walls)
	sum.MeanBuilt, sum.P95Built = meanP95(built)
	for i := range runs {
		sum.MeanCost += runs[i] + SimBuildRuns*built[i]
	}
	if len(runs) > 0 {
		sum.MeanCost /= float64(len(runs))
	}
	if len(highRatios) > 0 {
		sort.Float64s(highRatios)
		sum.EstHighP90 = highRatios[len(highRatios)*9/10]
	}
	if len(ratios) > 0 {
		sort.Float64s(ratios)
		sum.EstRatio = ratios[len(ratios)/2]
	}
	return sum
}

// meanP95 returns the mean and the 95th percentile (nearest rank) of xs.
func meanP95(xs []float64) (mean, p95 float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	for _, x := range s {
		mean += x
	}
	return mean / float64(len(s)), s[int(math.Ceil(0.95*float64(len(s))))-1]
}
