// Package session runs a performance bisection: endpoints first, then one
// decision per midpoint (the classic search), or the probabilistic search's
// runs where they tell the most; then the culprit put head to head with its
// parent. It composes the pure search (package bisect), the decisions
// (package stats, bisect/posterior) and a bisect.Measurer, and records every
// run and decision for the report.
//
// The files, by job: session.go (a Session, New, Run: the bisection),
// config.go (its settings, steps, result), events.go (what was measured, in
// order: replayed on resume, recorded live), measure.go (a revision's runs,
// with retries), compare.go (two revisions head to head: the endpoints, the
// confirmation, perfbisect compare), place.go (one candidate placed between
// the endpoints: a midpoint, perfbisect run; the look loop), round.go (k
// candidates a round), classic.go and bayes.go (the two searches Run
// drives once the endpoints differ), confirm.go (whether a named first bad
// commit stands: the confirmation and the head-to-head against its parent),
// marks.go (verdicts given by hand), plan.go (the pre-flight estimate).
package session

import (
	"context"
	"fmt"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/stats"
)

// Session is one bisection in progress.
type Session struct {
	cfg    Config
	m      bisect.Measurer
	seq    int  // events used so far (replayed or live)
	live   bool // past the replay
	search *bisect.Search
	res    *Result
	budget stats.Budget
	// ends is the design of the endpoints' and the confirmation's comparisons
	// (--repeats, then +--repeats per look, up to --max-repeats); mid is the
	// design of a midpoint's placement, planned from the endpoints' shift and
	// noise (Plan) and ends' schedule until then.
	ends, mid stats.Design
	conf      stats.Design // the confirmation's design, planned like mid
	half      float64      // the midpoint effect Plan found (0: none; mid's schedule stands)
	decided   int          // midpoint decisions taken (tests made), for Budget.MidpointAlpha
	runs      int          // runs measured so far, for the estimate
	wall      time.Duration
	trail     []trailRun     // every usable run's metric, in the order measured (for the probabilistic search)
	usable    map[string]int // runs in trail per commit
	bayes     *bayes         // the probabilistic search, once started
	builds    int            // prepares timed (replayed or live), for the cost of a build
	building  time.Duration  // their time
	hand      handSteps      // marks given by hand
	on        int            // the host of the runs being taken (Config.Hosts' index; 0 on one machine)
	lastHost  int            // the host that took the last run (Config.Hosts' index)
	hostRefs  [][2]int       // per host: usable runs of good and of bad
	hostCands []int          // per host: candidate runs taken
	recordErr error          // storing the hand marks kept at a divergence failed
}

// trailRun is one run's metric value in measuring order.
type trailRun struct {
	commit string
	v      float64
	host   int // Config.Hosts' index of the host that measured it
}

// probabilistic reports whether the session runs the probabilistic search.
func (c *Config) probabilistic() bool { return c.Search == "" || c.Search == SearchBayes }

// New prepares a session; it validates cfg and the commit range.
func New(cfg Config, m bisect.Measurer) (*Session, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	search, err := bisect.NewSearchOptions(cfg.Commits, []string{cfg.Good}, cfg.Bad, bisect.Options{FirstParent: cfg.FirstParent})
	if err != nil {
		return nil, err
	}
	n := len(search.Candidates())
	if len(cfg.Hosts) > 1 {
		if !cfg.probabilistic() || cfg.Fixed {
			return nil, bisect.Usagef("runner hosts (%d) need the probabilistic search (the classic one decides one midpoint at a time on one machine)", len(cfg.Hosts))
		}
		if _, ok := m.(bisect.HostMeasurer); !ok {
			return nil, fmt.Errorf("session: %d runner hosts and a Measurer that cannot measure on a host", len(cfg.Hosts))
		}
		seen := map[string]bool{}
		for _, h := range cfg.Hosts {
			if h == "" || seen[h] {
				return nil, bisect.Usagef("runner hosts: %q is empty or given twice", h)
			}
			seen[h] = true
		}
	}
	if cfg.Jobs > n {
		cfg.Jobs = n // more points per round than candidates would spend the budget on nothing
	}
	if cfg.probabilistic() && !cfg.Fixed {
		// Two decisions share the error: the endpoints' comparison (is there
		// a change to look for) and the posterior's answer.
		b := stats.Budget{Confidence: cfg.Confidence, Steps: 2, Looks: stats.Looks(cfg.Repeats, cfg.MaxRepeats, cfg.Repeats)}
		ends := stats.Design{Start: cfg.Repeats, Batch: cfg.Repeats, Max: cfg.MaxRepeats, Alpha: b.StepAlpha()}
		if !ends.CanDecide() {
			return nil, bisect.Usagef("{repeats} %d to {max-repeats} %d cannot reach p <= %.2g at any look of the endpoints' comparison: use {max-repeats} %d or more", cfg.Repeats, cfg.MaxRepeats, ends.LookAlpha(ends.Looks()), stats.RunsNeeded(ends.LookAlpha(ends.Looks())))
		}
		return &Session{cfg: cfg, m: m, search: search, budget: b, ends: ends, mid: ends, conf: ends, res: &Result{
			Runs: map[string][]bisect.Run{}, Verdicts: map[string]string{}, Skipped: map[string]string{}, Budget: b,
			Improvement: cfg.Improvement,
		}, hostRefs: make([][2]int, len(cfg.Hosts)), hostCands: make([]int, len(cfg.Hosts))}, nil
	}
	b := stats.Budget{Confidence: cfg.Confidence, Steps: expectedDecisions(n, cfg.Jobs),
		Looks: stats.Looks(cfg.Repeats, cfg.MaxRepeats, cfg.Repeats)}
	if stats.MinP(cfg.MaxRepeats, cfg.MaxRepeats) > b.LookAlpha(b.Looks) && stats.MinP(cfg.Repeats, cfg.Repeats) > b.LookAlpha(1) {
		// No look could ever decide: the answer would be "no regression" by
		// construction. Find the smallest limit that can.
		need := cfg.MaxRepeats
		for ; need < 1000; need++ {
			bb := b
			bb.Looks = stats.Looks(cfg.Repeats, need, cfg.Repeats)
			if stats.MinP(need, need) <= bb.LookAlpha(bb.Looks) {
				break
			}
		}
		return nil, bisect.Usagef("{max-repeats} %d cannot decide anything: with %d decisions at {confidence} %g a decision needs p <= %.2g, which %d runs per side cannot reach; use {max-repeats} %d or more", cfg.MaxRepeats, b.Steps, cfg.Confidence, b.LookAlpha(b.Looks), cfg.MaxRepeats, need)
	}
	ends := stats.Design{Start: cfg.Repeats, Batch: cfg.Repeats, Max: cfg.MaxRepeats, Alpha: b.StepAlpha()}
	if cfg.Fixed {
		ends.Start = cfg.MaxRepeats
	}
	return &Session{cfg: cfg, m: m, search: search, budget: b, ends: ends, mid: ends, conf: ends, res: &Result{
		Runs: map[string][]bisect.Run{}, Verdicts: map[string]string{}, Skipped: map[string]string{}, Budget: b,
		Improvement: cfg.Improvement,
	}}, nil
}

// Run performs the whole session. It returns the Result (also on error, with
// what was measured so far), an *EndpointError when an endpoint cannot be
// measured, and other errors for tool or machine failures.
func (s *Session) Run(ctx context.Context) (*Result, error) {
	c := s.cfg
	s.logf("error budget: %d decisions, each wrong with probability <= %.3g (the whole answer right with probability >= %g); endpoints: %s",
		s.budget.Steps, s.budget.StepAlpha(), c.Confidence, s.ends)
	if mp := stats.MinP(c.Repeats, c.Repeats); mp > s.budget.LookAlpha(1) {
		s.logf("note: %d runs per side cannot reach the first look's alpha %.2g (best p %.2g); at least %d are needed, so the first decision needs more runs than %s",
			c.Repeats, s.budget.LookAlpha(1), mp, stats.RunsNeeded(s.budget.LookAlpha(1)), c.setting("repeats"))
	}
	// 1. Endpoints, interleaved.
	cmp, err := s.compare(ctx, c.Good, c.Bad, RoleEndpoints, s.ends, c.Threshold)
	if err != nil {
		return s.res, err
	}
	s.res.Verdicts[c.Good] = "good"
	if !s.changed(cmp) {
		s.res.Outcome = NoRegression
		if c.Unresolved(cmp) {
			// The change may be there, hidden by the noise: bad is not
			// "good", and no search is made.
			s.res.Outcome = Undecided
		} else {
			s.res.Verdicts[c.Bad] = "good"
		}
		s.res.Why = s.noChange(cmp)
		return s.res, nil
	}
	s.res.Verdicts[c.Bad] = "bad"
	// 2. The search: the probabilistic one, or the classic midpoints and
	// the confirmation against the parent.
	search := s.classicSearch
	if c.probabilistic() && !c.Fixed {
		search = s.bayesSearch
	}
	return s.res, search(ctx, cmp)
}

func (s *Session) changed(cmp stats.Comparison) bool { return s.cfg.Changed(cmp) }

// noChange says why the endpoints did not show the change looked for.
func (s *Session) noChange(cmp stats.Comparison) string {
	what, old, new, way := "regression", "good", "bad", "better"
	if s.cfg.Improvement {
		what, old, new, way = "improvement", "old", "new", "worse or no better"
	}
	switch cmp.Verdict {
	case stats.Different:
		return fmt.Sprintf("%s is %s than %s (%+.1f%%, %s): no %s reproduced", new, way, old, 100*cmp.Shift.Est, cmp.Rule, what)
	case stats.Same:
		return fmt.Sprintf("%s and %s do not differ by %.1f%% or more (%s): no %s reproduced", old, new, 100*s.cfg.Threshold, cmp.Rule, what)
	}
	if !s.cfg.Unresolved(cmp) {
		// UNKNOWN, but leaning the other way or excluding the threshold.
		iv := cmp.Equivalence
		if iv.Conf == 0 {
			iv = cmp.Shift
		}
		return fmt.Sprintf("no %s of %.1f%% or more shown at the repeat limit (%d runs per side: %s-%s shift %+.1f%% [%.4g%% interval %+.1f%%..%+.1f%%%s], p=%.2g): no %s reproduced",
			what, 100*s.cfg.Threshold, cmp.NNew, old, new, 100*cmp.Shift.Est, 100*iv.Conf, 100*iv.Lo, 100*iv.Hi, cmp.LeftOutText(), cmp.P, what)
	}
	// The levels in the words the search's answers use (good-bad shift at
	// noise per run), so that a reader sees what was out of reach.
	return fmt.Sprintf("undecided at the repeat limit (%d runs per side): %s-%s shift %+.1f%% at %.1f%% noise per run; %s; %s",
		s.cfg.MaxRepeats, old, new, 100*cmp.Shift.Est, 100*cmp.Noise, cmp.Rule, cmp.Need)
}

func (s *Session) parentOf(h string) string {
	for _, c := range s.cfg.Commits {
		if c.Hash == h && len(c.Parents) > 0 {
			return c.Parents[0]
		}
	}
	return ""
}

func (s *Session) step(st Step) {
	s.res.Steps = append(s.res.Steps, st)
	if s.cfg.Hooks.OnStep != nil {
		s.cfg.Hooks.OnStep(st)
	}
}

func (s *Session) logf(format string, args ...any) {
	if s.cfg.Hooks.Logf != nil {
		s.cfg.Hooks.Logf(format, args...)
	}
}

// Result returns the session's result so far (the same value Run returns): the
// runs and steps recorded up to now.
func (s *Session) Result() *Result { return s.res }
