// Package session runs a performance bisection: endpoints first, then one
// decision per midpoint, then the culprit's confirmation against its parent. It
// composes the pure search (package bisect), the decisions (package stats) and a
// bisect.Measurer, and records every run and decision for the report.
package session

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/stats"
)

// Metric names the number a run is judged by.
type Metric string

// Metrics. Higher tps and qps are better; higher latency and CPU time per
// transaction are worse.
const (
	TPS       Metric = "tps"
	QPS       Metric = "qps"
	P95       Metric = "p95"
	P99       Metric = "p99"
	CPUPerTxn Metric = "cpu-per-txn"
)

// Metrics lists the metrics --metric accepts.
var Metrics = []Metric{TPS, QPS, P95, P99, CPUPerTxn}

// Value returns the metric of a run: tps and qps per second, p95 and p99
// event latency in milliseconds, server CPU per transaction in microseconds.
func (m Metric) Value(r bisect.Run) float64 {
	switch m {
	case CPUPerTxn:
		return float64(r.CPUPerTxn) / float64(time.Microsecond)
	case QPS:
		return r.QPS
	case P95:
		return float64(r.LatencyP95) / float64(time.Millisecond)
	case P99:
		return float64(r.LatencyP99) / float64(time.Millisecond)
	}
	return r.TPS
}

// Unit is the metric's unit for reports.
func (m Metric) Unit() string {
	switch m {
	case CPUPerTxn:
		return "us/txn"
	case QPS:
		return "qps"
	case P95, P99:
		return "ms"
	}
	return "tps"
}

// HigherIsBetter tells the metric's direction.
func (m Metric) HigherIsBetter() bool { return m == TPS || m == QPS }

// Config is what a session needs besides the Measurer.
type Config struct {
	Good, Bad  string          // full hashes of the endpoints
	Commits    []bisect.Commit `json:"-"` // bisect.Range(good, bad)
	Repeats    int             // starting runs per revision (per side, or blocks for a midpoint)
	MaxRepeats int             // the limit; UNKNOWN at the limit means skip (midpoint) or inconclusive (endpoints)
	Threshold  float64         // smallest relative change that counts, e.g. 0.05
	Confidence float64         // probability that the whole answer is right, e.g. 0.95
	Metric     Metric
	NoConfirm  bool // skip the culprit's confirmation against its parent
	// Improvement searches for the commit that made things faster (git bisect's
	// old/new terms): Good is the old revision, Bad the new one, and the change
	// looked for is in the better direction of Metric.
	Improvement bool
	// FirstParent restricts the search to bad's first-parent chain (git bisect
	// --first-parent): the answer can be a merge commit.
	FirstParent bool
	// Jobs is the number of commits placed per round (k-ary search, for
	// parallel capacity): they are measured together in blocks that share the
	// good and bad runs; 0 or 1 is exact bisection.
	Jobs int

	// Fixed makes every decision take --max-repeats runs per side (blocks) in
	// one look, with no plan from the endpoints: the fixed-sample design that
	// perfbisect simulate compares the sequential one with.
	Fixed bool `json:",omitempty"`

	// Search is the search strategy: SearchBayes (probabilistic bisection,
	// the default when empty) or SearchClassic (one sequential decision per
	// midpoint, then the confirmation against the parent).
	Search string `json:",omitempty"`
	// MaxRuns bounds the runs of a probabilistic search (the endpoints'
	// included): at the limit it answers with the smallest set of commits
	// that holds the confidence. 0 sets it from the pre-flight estimate
	// (BudgetRuns).
	MaxRuns int `json:",omitempty"`
	// BuildRuns is what building a commit costs, in runs (a build's time over
	// a run's), for the probabilistic search's choice between a commit already
	// built and a new one; 0 measures it (the time Prepare takes), assuming
	// 10 until a build has been timed.
	BuildRuns float64 `json:"-"`

	// Decided is the number of midpoint decisions an earlier process of this
	// bisection took (perfbisect run: one process per commit), so that the
	// error budget (stats.Budget.MidpointAlpha) counts them.
	Decided int `json:"-"`

	// OnStep, when set, is called after each decision (for progress output and
	// the store).
	OnStep func(Step) `json:"-"`

	// Replay holds the events of an interrupted run of this same session (same
	// endpoints and settings): the session uses them, in order, instead of
	// measuring, for as long as it asks for the same things in the same order
	// (it does, being deterministic given its measurements), then measures live.
	Replay []Event `json:"-"`
	// Record, when set, is called with every event measured live, before the
	// session uses it, with its sequence number (len(Replay) for the first live
	// one when the whole replay was used); an error stops the session, so that
	// nothing is decided on a run the store does not hold.
	Record func(seq int, e Event) error `json:"-"`
	// Diverged, when set, is called when the session stops following Replay at
	// event seq (the settings or the code changed): the events from seq on are
	// no longer part of this session and new ones will be recorded in their place.
	Diverged func(seq int) `json:"-"`
	// Logf, when set, receives progress lines.
	Logf func(format string, args ...any) `json:"-"`
	// OnEstimate, when set, gets the pre-flight estimate of the session's runs
	// (Result.EstimatedRuns, replayed and earlier runs included) once the
	// endpoints are measured: for progress displays.
	OnEstimate func(runs int) `json:"-"`
}

// Validate checks the configuration and returns an error wrapping
// bisect.ErrUsage naming the bad field.
func (c *Config) Validate() error {
	switch {
	case c.Repeats < 2:
		return bisect.Usagef("{repeats} %d: need at least 2 runs per revision", c.Repeats)
	case c.MaxRepeats > 1000:
		return bisect.Usagef("{max-repeats} %d: at most 1000 runs per side", c.MaxRepeats)
	case c.MaxRepeats < c.Repeats:
		return bisect.Usagef("{max-repeats} %d is below {repeats} %d", c.MaxRepeats, c.Repeats)
	case !(c.Threshold > 0 && c.Threshold < 1):
		return bisect.Usagef("{threshold} %.4g%%: must be between 0 and 100%%", 100*c.Threshold)
	case !(c.Confidence > 0.5 && c.Confidence < 1):
		return bisect.Usagef("{confidence} %.4g: must be between 0.5 and 1", c.Confidence)
	case c.Jobs < 0 || c.Jobs > 16:
		return bisect.Usagef("{jobs} %d: want 1 to 16 commits per round", c.Jobs)
	case c.Search != "" && c.Search != SearchBayes && c.Search != SearchClassic:
		return bisect.Usagef("{search} %q: want bayes or classic", c.Search)
	case c.MaxRuns < 0:
		return bisect.Usagef("{max-runs} %d: want 0 (from the estimate) or a number of runs", c.MaxRuns)
	case !slices.Contains(Metrics, c.Metric):
		return bisect.Usagef("{metric} %q: want tps, qps, p95, p99 or cpu-per-txn", c.Metric)
	}
	return nil
}

// Role says why a commit was measured.
type Role string

// Roles of a step.
const (
	RoleEndpoints Role = "endpoints"
	RoleMidpoint  Role = "midpoint"
	RoleCompare   Role = "compare" // perfbisect compare: base (Good) against head (Bad)
	RoleConfirm   Role = "confirm"
)

// Step is one decision with its evidence.
type Step struct {
	Role    Role
	Commit  string // the candidate (midpoint), the bad endpoint, or the culprit (confirm)
	Against string // good endpoint, or the culprit's parent (confirm)
	Verdict string // good, bad, skip; DIFFERENT/SAME/UNKNOWN for endpoints and confirm
	Reason  string // the rule that fired, or why the commit was skipped
	Need    string // what more data would have needed, when undecided
	Note    string
	Compare *stats.Comparison     `json:",omitempty"`
	Class   *stats.Classification `json:",omitempty"`
	Looks   int
}

// Outcome is how a session ended.
type Outcome string

// Outcomes.
const (
	Found        Outcome = "found"
	NoRegression Outcome = "no-regression"
	Ambiguous    Outcome = "ambiguous"
)

// Result is the answer with everything measured on the way.
type Result struct {
	Outcome  Outcome
	FirstBad string   // Found
	Range    []string // Ambiguous: candidate shas, newest first
	Why      string   // one line: why this outcome
	Steps    []Step
	Runs     map[string][]bisect.Run // every run of this session, per commit
	Verdicts map[string]string       // commit -> good, bad, skip
	Skipped  map[string]string       // commit -> why it was skipped
	Budget   stats.Budget
	Estimate string // pre-flight estimate printed after the endpoints
	// EstimatedRuns is the pre-flight estimate of the session's runs in all
	// (the endpoints' included); 0 when none was made.
	EstimatedRuns int
	Advice        string // what would help when the estimate is out of reach
	// SmallestChange is the smallest relative change (0.05: 5%) the
	// probabilistic search resolves at the endpoints' noise within
	// SmallestChangeRuns runs (the run limit, or the least default one);
	// 0 when not estimated (the classic search, endpoints that do not differ).
	SmallestChange     float64
	SmallestChangeRuns int
	Replayed           int // events taken from the store (a resumed session) instead of measured
	Retried            int // runs that failed once and were taken again
	Measured           int // runs taken (replayed or live, failed ones included)
	// Improvement is set when the session looked for a speed-up (git bisect's
	// old/new terms: FirstBad is then the first new commit).
	Improvement bool
	// Posterior is the probabilistic search's posterior at its end, one entry
	// per candidate (newest first); empty for the classic search.
	Posterior []Posterior `json:"-"`
}

// EndpointError is an endpoint that cannot be measured: the session stops with
// the evidence (a configuration problem, or endpoints that do not build).
type EndpointError struct {
	Which string // good or bad
	Err   error
}

func (e *EndpointError) Error() string {
	return fmt.Sprintf("%s endpoint cannot be measured: %v", e.Which, e.Err)
}

func (e *EndpointError) Unwrap() error { return e.Err }

// Event kinds.
const (
	EventPrepare = "prepare" // a revision was got ready before its runs, or found untestable then
	EventRun     = "run"     // a run, or a revision found untestable during one
)

// Event is one thing a session measured, in the order it happened: what the
// store keeps so that an interrupted session can be resumed. A run event has Run
// set, or Reason (the revision was untestable); a prepare event has Reason set
// when the revision was untestable.
type Event struct {
	Kind   string      // EventPrepare or EventRun
	Commit string      // full hash
	Run    *bisect.Run `json:",omitempty"`
	Reason string      `json:",omitempty"` // bisect.UntestableError.Reason
	Err    string      `json:",omitempty"` // its evidence, as text
	// Took is how long a prepare took (the build, the datadir): the
	// probabilistic search weighs builds by it, so a resumed session needs
	// the stored time to choose as the interrupted one did.
	Took time.Duration `json:",omitempty"`
}

// untestable turns an event's stored failure back into the error the session
// saw when it was live.
func (e Event) untestable() error {
	if e.Reason == "" {
		return nil
	}
	var err error
	if e.Err != "" {
		err = errors.New(e.Err)
	}
	return &bisect.UntestableError{Commit: e.Commit, Reason: e.Reason, Err: err}
}

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
}

// trailRun is one run's metric value in measuring order.
type trailRun struct {
	commit string
	v      float64
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
		}}, nil
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

// NewComparison prepares a comparison of two revisions (perfbisect compare):
// cfg.Good is the base (old), cfg.Bad the head (new); neither needs to be an
// ancestor of the other and cfg.Commits is not used. The comparison is one
// decision with the whole error 1-Confidence, looked at as the endpoints are
// (--repeats, then +--repeats per look up to --max-repeats). It validates cfg.
func NewComparison(cfg Config, m bisect.Measurer) (*Session, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Good == "" || cfg.Bad == "" {
		return nil, bisect.Usagef("a comparison needs a base and a head revision")
	}
	b := stats.Budget{Confidence: cfg.Confidence, Steps: 1, Looks: stats.Looks(cfg.Repeats, cfg.MaxRepeats, cfg.Repeats)}
	ends := stats.Design{Start: cfg.Repeats, Batch: cfg.Repeats, Max: cfg.MaxRepeats, Alpha: b.StepAlpha()}
	if !ends.CanDecide() {
		return nil, bisect.Usagef("{repeats} %d to {max-repeats} %d cannot reach p <= %.2g at any look: use {max-repeats} %d or more", cfg.Repeats, cfg.MaxRepeats, ends.LookAlpha(ends.Looks()), stats.RunsNeeded(ends.LookAlpha(ends.Looks())))
	}
	return &Session{cfg: cfg, m: m, budget: b, ends: ends, mid: ends, conf: ends, res: &Result{
		Runs: map[string][]bisect.Run{}, Verdicts: map[string]string{}, Skipped: map[string]string{}, Budget: b,
		Improvement: cfg.Improvement,
	}}, nil
}

// Compare measures the base and the head interleaved until the comparison is
// DIFFERENT or SAME, or UNKNOWN at --max-repeats, and reports whether the
// head has the change looked for (a regression, or with Improvement a
// speed-up; Config.Changed). Errors as for Run (an *EndpointError when either
// revision cannot be measured). Only for a session of NewComparison.
func (s *Session) Compare(ctx context.Context) (cmp stats.Comparison, changed bool, err error) {
	cmp, err = s.compare(ctx, s.cfg.Good, s.cfg.Bad, RoleCompare)
	if err != nil {
		return cmp, false, err
	}
	return cmp, s.changed(cmp), nil
}

// Run performs the whole session. It returns the Result (also on error, with
// what was measured so far), an *EndpointError when an endpoint cannot be
// measured, and other errors for tool or machine failures.
func (s *Session) Run(ctx context.Context) (*Result, error) {
	c := s.cfg
	s.logf("error budget: %d decisions, each wrong with probability <= %.3g (the whole answer right with probability >= %g); endpoints: %s",
		s.budget.Steps, s.budget.StepAlpha(), c.Confidence, s.ends)
	if mp := stats.MinP(c.Repeats, c.Repeats); mp > s.budget.LookAlpha(1) {
		s.logf("note: %d runs per side cannot reach the first look's alpha %.2g (best p %.2g); at least %d are needed, so the first decision needs more runs than --repeats",
			c.Repeats, s.budget.LookAlpha(1), mp, stats.RunsNeeded(s.budget.LookAlpha(1)))
	}
	// 1. Endpoints, interleaved.
	cmp, err := s.compare(ctx, c.Good, c.Bad, RoleEndpoints)
	if err != nil {
		return s.res, err
	}
	s.res.Verdicts[c.Good] = "good"
	if !s.changed(cmp) {
		s.res.Verdicts[c.Bad] = "good"
		s.res.Outcome = NoRegression
		s.res.Why = s.noChange(cmp)
		return s.res, nil
	}
	s.res.Verdicts[c.Bad] = "bad"
	if c.probabilistic() && !c.Fixed {
		if err := s.bayesSearch(ctx, cmp); err != nil {
			return s.res, err
		}
		return s.res, nil
	}
	s.Plan(cmp)

	// 2. Midpoints, one per step (or Jobs per round).
	for {
		var err error
		if c.Jobs > 1 {
			if pts := s.search.NextK(c.Jobs); len(pts) > 1 {
				err = s.round(ctx, pts)
				if err != nil {
					return s.res, err
				}
				continue
			}
		}
		cand, ok := s.search.Next()
		if !ok {
			break
		}
		side, err := s.classify(ctx, cand)
		if err != nil {
			return s.res, err
		}
		s.search.Mark(cand, side)
		s.res.Verdicts[cand] = side.String()
	}
	r := s.search.Result()
	switch r.Outcome {
	case bisect.Ambiguous:
		s.res.Outcome, s.res.Range = Ambiguous, r.Range
		s.res.Why = fmt.Sprintf("skipped commits border the first bad commit: it is one of %d commits", len(r.Range))
		return s.res, nil
	case bisect.Found:
	default:
		return s.res, fmt.Errorf("search ended while still running (internal error)")
	}
	// 3. Confirmation against the parent.
	s.res.FirstBad = r.FirstBad
	s.res.Outcome = Found
	parent := s.parentOf(r.FirstBad)
	switch {
	case c.NoConfirm:
		s.res.Why = "bisection ended (not confirmed against the parent: --no-confirm)"
		return s.res, nil
	case parent == "":
		s.res.Why = "bisection ended (the first bad commit has no parent to confirm against)"
		return s.res, nil
	case parent == c.Good && r.FirstBad == c.Bad:
		// The endpoints' comparison was this very test, at a level at
		// least as strict: measuring the pair again would add nothing.
		s.res.Why = fmt.Sprintf("confirmed against its parent %.10s by the endpoints' comparison: %+.1f%% (%s)", parent, 100*cmp.Shift.Est, cmp.Rule)
		return s.res, nil
	}
	cc, err := s.compare(ctx, parent, r.FirstBad, RoleConfirm)
	if bisect.IsUntestable(err) {
		s.res.Outcome, s.res.Range, s.res.FirstBad = Ambiguous, []string{r.FirstBad, parent}, ""
		s.res.Why = fmt.Sprintf("%.10s could not be confirmed against its parent %.10s: %v", r.FirstBad, parent, err)
		return s.res, nil
	}
	if err != nil {
		return s.res, err
	}
	if s.changed(cc) {
		s.res.Why = fmt.Sprintf("confirmed against its parent %.10s: %+.1f%% (%s)", parent, 100*cc.Shift.Est, cc.Rule)
		return s.res, nil
	}
	s.res.Outcome, s.res.Range, s.res.FirstBad = Ambiguous, []string{r.FirstBad, parent}, ""
	s.res.Why = fmt.Sprintf("%.10s was not confirmed against its parent %.10s (%s, %s): the change may be spread over several commits",
		r.FirstBad, parent, cc.Verdict, cc.Rule)
	return s.res, nil
}

// Changed reports whether a comparison of old against new (stats.Compare of
// the good runs against the bad runs) found the change the session looks for:
// a significant shift in the worse direction of the metric, or the better one
// with Improvement.
func (c *Config) Changed(cmp stats.Comparison) bool {
	if cmp.Verdict != stats.Different {
		return false
	}
	worse := cmp.Shift.Est < 0
	if !c.Metric.HigherIsBetter() {
		worse = cmp.Shift.Est > 0
	}
	return worse != c.Improvement
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
	default:
		return fmt.Sprintf("no %s reproduced at the repeat limit (%d runs per side): %s; %s", what, s.cfg.MaxRepeats, cmp.Rule, cmp.Need)
	}
}

// Endpoints measures the endpoints interleaved, as the first step of Run, and
// reports whether they show the change looked for; when not, why says so. It
// is what perfbisect run does once per git bisect before placing commits.
// Errors as for Run (an *EndpointError for an endpoint that cannot be measured).
func (s *Session) Endpoints(ctx context.Context) (cmp stats.Comparison, changed bool, why string, err error) {
	cmp, err = s.compare(ctx, s.cfg.Good, s.cfg.Bad, RoleEndpoints)
	if err != nil {
		return cmp, false, "", err
	}
	if !s.changed(cmp) {
		return cmp, false, s.noChange(cmp), nil
	}
	s.Plan(cmp)
	return cmp, true, "", nil
}

// Place measures one candidate in blocks with the endpoints and returns its
// mark (bisect.Good, bisect.Bad, or bisect.Skip when it is untestable or still
// undecided at the limit) with the decision's evidence: one step of Run, for
// perfbisect run. Errors are the tool's or the machine's (or a reference that
// fails), never the candidate's.
func (s *Session) Place(ctx context.Context, cand string) (bisect.Mark, Step, error) {
	m, err := s.classify(ctx, cand)
	if err != nil || len(s.res.Steps) == 0 {
		return m, Step{}, err
	}
	return m, s.res.Steps[len(s.res.Steps)-1], nil
}

func (s *Session) parentOf(h string) string {
	for _, c := range s.cfg.Commits {
		if c.Hash == h && len(c.Parents) > 0 {
			return c.Parents[0]
		}
	}
	return ""
}

// replayed returns the next stored event when it is the one the session asks
// for now (kind, commit); otherwise it leaves the replay for good.
func (s *Session) replayed(kind, commit string) (Event, bool) {
	if s.live {
		return Event{}, false
	}
	if s.seq < len(s.cfg.Replay) {
		e := s.cfg.Replay[s.seq]
		if e.Kind == kind && e.Commit == commit {
			s.seq++
			s.res.Replayed++
			return e, true
		}
		s.logf("resume: stored event %d (%s %.10s) is not what the session asks for now (%s %.10s): measuring from here on",
			s.seq, e.Kind, e.Commit, kind, commit)
		if s.cfg.Diverged != nil {
			s.cfg.Diverged(s.seq)
		}
	} else if s.seq > 0 {
		s.logf("resume: %d stored events replayed; measuring from here on", s.seq)
	}
	s.live = true
	return Event{}, false
}

// record hands a live event to the store (Config.Record) before it is used.
func (s *Session) record(e Event) error {
	seq := s.seq
	s.seq++
	if s.cfg.Record == nil {
		return nil
	}
	if err := s.cfg.Record(seq, e); err != nil {
		return fmt.Errorf("recording %s of %.10s: %w", e.Kind, e.Commit, err)
	}
	return nil
}

// untestableEvent makes the event of an untestable revision, or reports false
// for any other error (which is not recorded: resuming retries it).
func untestableEvent(kind, commit string, err error) (Event, bool) {
	var u *bisect.UntestableError
	if !errors.As(err, &u) {
		return Event{}, false
	}
	e := Event{Kind: kind, Commit: commit, Reason: u.Reason}
	if u.Err != nil {
		e.Err = u.Err.Error()
	}
	return e, true
}

// run takes one run of commit: the next stored one when resuming, else a live
// one, recorded. An untestable revision is recorded only with keepFailure: the
// failure of a reference run during a placement stops the session, and a
// resumed session must measure that run again, not replay the failure.
func (s *Session) run(ctx context.Context, commit string, keepFailure bool) (bisect.Run, error) {
	if e, ok := s.replayed(EventRun, commit); ok {
		if e.Run == nil {
			return bisect.Run{}, e.untestable()
		}
		return *e.Run, nil
	}
	runs, err := s.m.Measure(ctx, commit, 1)
	if err != nil {
		if e, ok := untestableEvent(EventRun, commit, err); ok && keepFailure {
			if rerr := s.record(e); rerr != nil {
				return bisect.Run{}, rerr
			}
		}
		return bisect.Run{}, err
	}
	if len(runs) != 1 {
		return bisect.Run{}, fmt.Errorf("measure %.10s: got %d runs, want 1", commit, len(runs))
	}
	r := runs[0]
	if err := s.record(Event{Kind: EventRun, Commit: commit, Run: &r}); err != nil {
		return bisect.Run{}, err
	}
	return r, nil
}

// Attempts at a run before its revision is given up (see measure).
const (
	candidateTries = 2 // a candidate that fails twice in a row is skipped
	referenceTries = 3 // good, bad, a parent: their failure stops the session
)

// triesFor is the number of attempts at a run of a candidate or a reference.
func triesFor(candidate bool) int {
	if candidate {
		return candidateTries
	}
	return referenceTries
}

// measure takes one run of commit and records it in the result; keepFailure
// as for run. A run that fails through the revision (a crash, no
// transactions) is taken again, up to tries attempts, before the revision is
// given up: one server that dies once must not make a commit untestable, nor
// stop the session when it is a reference (which has already run, so it gets
// one more attempt than a candidate).
func (s *Session) measure(ctx context.Context, commit string, keepFailure bool, tries int) (float64, error) {
	for try := 1; ; try++ {
		v, err := s.measureOnce(ctx, commit, keepFailure)
		if err == nil || !bisect.IsUntestable(err) || ctx.Err() != nil || try >= tries {
			return v, err
		}
		s.logf("run of %.10s failed (%v): attempt %d of %d", commit, err, try+1, tries)
		s.res.Retried++
	}
}

func (s *Session) measureOnce(ctx context.Context, commit string, keepFailure bool) (float64, error) {
	s.res.Measured++
	r, err := s.run(ctx, commit, keepFailure)
	if err != nil {
		return 0, err
	}
	s.res.Runs[commit] = append(s.res.Runs[commit], r)
	s.runs++
	if v := s.cfg.Metric.Value(r); v > 0 && !math.IsInf(v, 0) {
		s.trail = append(s.trail, trailRun{commit, v})
		if s.usable == nil {
			s.usable = map[string]int{}
		}
		s.usable[commit]++
	}
	s.wall += r.Wall
	v := s.cfg.Metric.Value(r)
	if !(v > 0) || math.IsInf(v, 0) {
		return 0, &bisect.UntestableError{Commit: commit, Reason: "no transactions",
			Err: fmt.Errorf("%s = %v in a %.1fs window", s.cfg.Metric, v, r.Window.Seconds())}
	}
	return v, nil
}

// endpointError wraps an untestable endpoint's error in an *EndpointError (the
// session stops with that evidence); other errors pass unchanged.
func endpointError(role Role, isBad bool, err error) error {
	if role != RoleEndpoints && role != RoleCompare || !bisect.IsUntestable(err) {
		return err
	}
	which := "good"
	if isBad {
		which = "bad"
	}
	return &EndpointError{Which: which, Err: err}
}

// compare measures old and new interleaved (old new, new old, ...) and decides
// with stats.Compare at each look.
func (s *Session) compare(ctx context.Context, old, new string, role Role) (stats.Comparison, error) {
	var xs, ys []float64
	var cmp stats.Comparison
	for _, h := range []string{old, new} {
		if err := s.prepare(ctx, h); err != nil {
			return cmp, endpointError(role, h == new, err)
		}
	}
	d := s.ends
	if role == RoleConfirm {
		d = s.conf
	}
	for look := 1; ; look++ {
		target := d.N(look)
		for len(xs) < target {
			order := []string{old, new}
			if len(xs)%2 == 1 {
				order = []string{new, old}
			}
			for _, h := range order {
				v, err := s.measure(ctx, h, true, referenceTries)
				if err != nil {
					return cmp, endpointError(role, h == new, err)
				}
				if h == old {
					xs = append(xs, v)
				} else {
					ys = append(ys, v)
				}
			}
		}
		cmp = stats.Compare(xs, ys, s.cfg.Threshold, d.LookAlpha(look))
		s.logf("%s %.10s vs %.10s, look %d: %s (%s)", role, old, new, look, cmp.Verdict, cmp.Rule)
		if cmp.Verdict != stats.Unknown || look >= d.Looks() {
			st := Step{Role: role, Commit: new, Against: old, Verdict: cmp.Verdict.String(), Reason: cmp.Rule,
				Need: cmp.Need, Compare: &cmp, Looks: look}
			s.step(st)
			return cmp, nil
		}
	}
}

// classify measures blocks of (good, bad, candidate) in rotating order and places
// the candidate with stats.Classify; an untestable candidate or one still
// undecided at the limit is skipped.
func (s *Session) classify(ctx context.Context, cand string) (bisect.Mark, error) {
	var blocks []stats.Block
	roles := []string{s.cfg.Good, s.cfg.Bad, cand}
	d := s.designFor(s.decided + 1)
	if !d.CanDecide() {
		return s.skip(cand, s.spent(d), 0), nil
	}
	if err := s.prepare(ctx, cand); err != nil {
		var u *bisect.UntestableError
		if errors.As(err, &u) {
			return s.skip(cand, u, 0), nil
		}
		return bisect.Unmarked, err
	}
	s.decided++
	for look := 1; ; look++ {
		target := d.N(look)
		for len(blocks) < target {
			var b stats.Block
			i := len(blocks)
			for k := 0; k < 3; k++ {
				h := roles[(i+k)%3]
				v, err := s.measure(ctx, h, h == cand, triesFor(h == cand))
				if err != nil {
					var u *bisect.UntestableError
					if h == cand && errors.As(err, &u) {
						return s.skip(cand, u, look), nil
					}
					if h != cand && bisect.IsUntestable(err) {
						return bisect.Unmarked, fmt.Errorf("reference %.10s failed while measuring %.10s: %w", h, cand, err)
					}
					return bisect.Unmarked, err
				}
				switch h {
				case s.cfg.Good:
					b.Good = v
				case s.cfg.Bad:
					b.Bad = v
				default:
					b.Cand = v
				}
			}
			if !s.cfg.Metric.HigherIsBetter() {
				b.Good, b.Bad, b.Cand = 1/b.Good, 1/b.Bad, 1/b.Cand
			}
			blocks = append(blocks, b)
		}
		cl := s.placed(stats.Classify(blocks, d.LookAlpha(look)))
		s.logf("midpoint %.10s, look %d: %s (%s)", cand, look, cl.Side, cl.Rule)
		if cl.Side != stats.Undecided || cl.Between || look >= d.Looks() {
			st := Step{Role: RoleMidpoint, Commit: cand, Against: s.cfg.Good, Reason: cl.Rule, Need: cl.Need,
				Note: cl.Note, Class: &cl, Looks: look}
			var m bisect.Mark
			switch cl.Side {
			case stats.GoodSide:
				m, st.Verdict = bisect.Good, "good"
			case stats.BadSide:
				m, st.Verdict = bisect.Bad, "bad"
			default:
				m, st.Verdict = bisect.Skip, "skip"
				s.res.Skipped[cand] = undecided(cl, len(blocks))
			}
			s.step(st)
			return m, nil
		}
	}
}

// undecided says why a measured candidate is skipped.
func undecided(cl stats.Classification, blocks int) string {
	if cl.Between {
		return fmt.Sprintf("neither good nor bad after %d blocks: %s", blocks, cl.Rule)
	}
	return fmt.Sprintf("undecided at the repeat limit (%d blocks): %s; %s", blocks, cl.Rule, cl.Need)
}

// spent is why a midpoint is skipped unmeasured: the session's error budget
// leaves its decision a share that design d cannot reach.
func (s *Session) spent(d stats.Design) *bisect.UntestableError {
	return &bisect.UntestableError{Reason: "error budget spent", Err: fmt.Errorf(
		"after %d midpoint decisions the next may err with probability %.2g, which %d blocks cannot reach (best p %.2g): not measured; a higher --max-repeats or a narrower range would decide it",
		s.cfg.Decided+s.decided, d.Alpha, d.Max, stats.MinP(d.Max, d.Max))}
}

// designFor is the design of midpoint decision k (1-based, counted in this
// process): the planned one at that decision's share of the error
// (Budget.MidpointAlpha), replanned when the share is smaller than the plan's.
func (s *Session) designFor(k int) stats.Design {
	d := s.mid
	alpha := s.budget.MidpointAlpha(s.cfg.Decided + k)
	if alpha == d.Alpha {
		return d
	}
	if s.half > 0 {
		d, _ = stats.Plan(s.half, alpha, 2, s.cfg.MaxRepeats)
		return d
	}
	d.Alpha = alpha
	return d
}

// placed keeps a classification's partial-change note only when the
// candidate is at least the threshold away from the end it sits with: a
// significant but smaller difference (a docs-only commit measured 1% off) is
// not worth a warning.
func (s *Session) placed(cl stats.Classification) stats.Classification {
	if cl.Note == "" {
		return cl
	}
	end := cl.MedianGood
	if cl.Side == stats.BadSide {
		end = cl.MedianBad
	}
	if end != 0 && math.Abs(cl.MedianCand-end)/math.Abs(end) < s.cfg.Threshold {
		cl.Note = ""
	}
	return cl
}

// expectedDecisions is the number of decisions a session over n candidates is
// expected to take with jobs commits per round: jobs per round over
// ceil(log_{jobs+1} n) rounds, plus the endpoints, the confirmation and one
// for skips (stats.ExpectedSteps for jobs <= 1).
func expectedDecisions(n, jobs int) int {
	if jobs <= 1 {
		return stats.ExpectedSteps(n)
	}
	rounds := int(math.Ceil(math.Log(float64(max(n, 2))) / math.Log(float64(jobs+1))))
	return jobs*rounds + 3
}

// round places several candidates at once (k-ary search): blocks hold one run
// each of good, bad and every candidate still undecided, in rotating order, so
// that the reference runs are shared; each candidate is decided on its own
// blocks with stats.Classify, and leaves the blocks once decided. The marks are
// applied in the order the search proposed the points; a mark that contradicts
// an earlier one of the round (noise) makes that commit a skip.
func (s *Session) round(ctx context.Context, pts []string) error {
	s.logf("round: placing %d commits together", len(pts))
	type point struct {
		h      string
		blocks []stats.Block
		mark   bisect.Mark
		step   Step
		done   bool
	}
	var active, all []*point
	for _, h := range pts {
		p := &point{h: h}
		all = append(all, p)
		if err := s.prepare(ctx, h); err != nil {
			var u *bisect.UntestableError
			if !errors.As(err, &u) {
				return err
			}
			p.step, p.mark, p.done = s.skipStep(h, u, 0), bisect.Skip, true
			continue
		}
		active = append(active, p)
	}
	// One design for the round (the blocks are shared): the strictest of the
	// points' shares of the error, so that none spends more than its own.
	var d stats.Design
	for i := range active {
		s.decided++
		if pd := s.designFor(s.decided); i == 0 || pd.Alpha < d.Alpha {
			d = pd
		}
	}
	if !d.CanDecide() && len(active) > 0 {
		for _, p := range active {
			p.step, p.mark, p.done = s.skipStep(p.h, s.spent(d), 0), bisect.Skip, true
		}
		active = nil
	}
	for look := 1; len(active) > 0; look++ {
		target := d.N(look)
		for len(active) > 0 && len(active[0].blocks) < target {
			i := len(active[0].blocks)
			roles := []string{s.cfg.Good, s.cfg.Bad}
			byHash := map[string]*point{}
			for _, p := range active {
				roles = append(roles, p.h)
				byHash[p.h] = p
			}
			vals := map[string]float64{}
			for k := range roles {
				h := roles[(i+k)%len(roles)]
				p := byHash[h] // nil for the references
				v, err := s.measure(ctx, h, p != nil, triesFor(p != nil))
				if err != nil {
					var u *bisect.UntestableError
					if p != nil && errors.As(err, &u) {
						p.step, p.mark, p.done = s.skipStep(h, u, look), bisect.Skip, true
						continue
					}
					if bisect.IsUntestable(err) {
						return fmt.Errorf("reference %.10s failed during a round: %w", h, err)
					}
					return err
				}
				if !s.cfg.Metric.HigherIsBetter() {
					v = 1 / v
				}
				vals[h] = v
			}
			var still []*point
			for _, p := range active {
				if p.done {
					continue // failed in this block
				}
				p.blocks = append(p.blocks, stats.Block{Good: vals[s.cfg.Good], Bad: vals[s.cfg.Bad], Cand: vals[p.h]})
				still = append(still, p)
			}
			active = still
		}
		var still []*point
		for _, p := range active {
			cl := s.placed(stats.Classify(p.blocks, d.LookAlpha(look)))
			s.logf("midpoint %.10s, look %d: %s (%s)", p.h, look, cl.Side, cl.Rule)
			if cl.Side == stats.Undecided && !cl.Between && look < d.Looks() {
				still = append(still, p)
				continue
			}
			p.step = Step{Role: RoleMidpoint, Commit: p.h, Against: s.cfg.Good, Reason: cl.Rule, Need: cl.Need, Note: cl.Note, Class: &cl, Looks: look}
			switch cl.Side {
			case stats.GoodSide:
				p.mark, p.step.Verdict = bisect.Good, "good"
			case stats.BadSide:
				p.mark, p.step.Verdict = bisect.Bad, "bad"
			default:
				p.mark, p.step.Verdict = bisect.Skip, "skip"
				s.res.Skipped[p.h] = undecided(cl, len(p.blocks))
			}
			p.done = true
		}
		active = still
	}
	// Marks in the order the search proposed the points; the steps say the
	// verdict the search took, so that the log replays in git.
	for _, p := range all {
		if !s.search.Consistent(p.h, p.mark) {
			why := fmt.Sprintf("measured %s, which contradicts another verdict of the same round: treated as skipped", p.mark)
			s.res.Skipped[p.h] = why
			s.logf("%.10s: %s", p.h, why)
			p.mark, p.step.Verdict = bisect.Skip, "skip"
			p.step.Note = strings.TrimPrefix(p.step.Note+"; "+why, "; ")
		}
		s.search.Mark(p.h, p.mark)
		s.res.Verdicts[p.h] = p.mark.String()
		s.step(p.step)
	}
	return nil
}

// skip records an untestable candidate and its step.
func (s *Session) skip(cand string, u *bisect.UntestableError, look int) bisect.Mark {
	s.step(s.skipStep(cand, u, look))
	return bisect.Skip
}

// skipStep records why an untestable candidate is skipped and returns its step
// (not yet emitted).
func (s *Session) skipStep(cand string, u *bisect.UntestableError, look int) Step {
	why := u.Reason
	if u.Err != nil {
		why += ": " + u.Err.Error()
	}
	s.res.Skipped[cand] = why
	return Step{Role: RoleMidpoint, Commit: cand, Verdict: "skip", Reason: why, Looks: look}
}

// prepare gets a revision ready before its first run when the Measurer can.
// When resuming, a stored prepare event stands for it (a revision prepared
// before is got ready again by its first live run, from the build cache).
func (s *Session) prepare(ctx context.Context, commit string) error {
	p, ok := s.m.(bisect.Preparer)
	if !ok {
		return nil
	}
	if e, ok := s.replayed(EventPrepare, commit); ok {
		s.prepared(e.Took)
		return e.untestable()
	}
	start := time.Now()
	err := p.Prepare(ctx, commit)
	took := time.Since(start)
	s.prepared(took)
	e, ok := untestableEvent(EventPrepare, commit, err)
	e.Took = took
	switch {
	case err == nil:
		return s.record(Event{Kind: EventPrepare, Commit: commit, Took: took})
	case ok:
		if rerr := s.record(e); rerr != nil {
			return rerr
		}
	}
	return err
}

// Plan sets the designs of the rest of the session from the endpoints'
// comparison (its relative shift and per-run noise) and makes the pre-flight
// estimate: a midpoint is placed against the midpoint between good and bad, so
// its effect is half the good-bad shift on a log scale, against the noise of a
// candidate run and of a midpoint (the mean of a good and a bad run): effect =
// (|shift|/2) / (noise*sqrt(1.5)). Its design starts with the fewest blocks
// that decide that effect at the first look with probability 0.8
// (stats.Plan, at most --max-repeats). The confirmation compares the culprit
// with its parent, the full shift against the noise of two runs. Run calls Plan
// after the endpoints; perfbisect run calls it with the stored endpoints'
// comparison before placing a commit.
func (s *Session) Plan(cmp stats.Comparison) {
	shift := math.Abs(math.Log1p(cmp.Shift.Est))
	noise := cmp.Noise
	if !(noise > 0) || math.IsNaN(shift) || shift == 0 || s.cfg.Fixed {
		return // keep the fixed schedules
	}
	alpha := s.budget.StepAlpha()
	half := shift / 2 / (noise * math.Sqrt(1.5))
	full := shift / (noise * math.Sqrt2)
	mid, reachable := stats.Plan(half, alpha, 2, s.cfg.MaxRepeats)
	conf, _ := stats.Plan(full, alpha, 2, s.cfg.MaxRepeats)
	s.mid, s.conf, s.half = mid, conf, half
	s.estimate(cmp, half, full, reachable)
}

// estimate makes the pre-flight estimate (Result.Estimate, EstimatedRuns):
// expected runs of the midpoint steps (stats.ExpectedN of the midpoint design;
// a step still undecided at the limit is skipped and costs another step) and
// of the confirmation, and the wall time at this session's time per run; with
// advice when the midpoint effect is out of reach of --max-repeats.
func (s *Session) estimate(cmp stats.Comparison, half, full float64, reachable bool) {
	c := s.cfg
	n := len(s.search.Candidates())
	width := 3
	steps := math.Ceil(math.Log2(float64(max(n, 1))))
	if c.Jobs > 1 {
		width = 2 + c.Jobs
		steps = math.Ceil(math.Log(float64(max(n, 1))) / math.Log(float64(c.Jobs+1)))
	}
	decided := stats.SequentialPower(half, s.mid)
	// A skipped midpoint makes the search try a neighbour: about 1/decided
	// steps per bisection step, at most every candidate.
	steps = math.Min(steps/math.Max(decided, 0.05), float64(n))
	blocks := stats.ExpectedN(half, s.mid)
	runs := steps*float64(width)*blocks + 2*stats.ExpectedN(full, s.conf)
	if c.NoConfirm {
		runs = steps * float64(width) * blocks
	}
	s.res.EstimatedRuns = s.runs + int(math.Round(runs))
	var perRun time.Duration
	if s.runs > 0 {
		perRun = s.wall / time.Duration(s.runs)
	}
	s.res.Estimate = fmt.Sprintf("good-bad shift %+.1f%% with %.1f%% noise per run: a midpoint is placed against half of it (%.2g noise units); about %.0f steps of %.1f blocks of %d runs (planned: %s) and the confirmation: about %.0f more runs, %s at %.1fs per run (plus builds)",
		100*cmp.Shift.Est, 100*cmp.Noise, half, steps, blocks, width, s.mid, runs,
		(time.Duration(runs) * perRun).Round(time.Second), perRun.Seconds())
	if !reachable {
		need := min(stats.NeededN(half, s.mid.LookAlpha(s.mid.Looks()), 0.9), 1000)
		s.res.Advice = fmt.Sprintf("out of reach: placing a midpoint needs about %d blocks per step (--max-repeats %d); most midpoints will be skipped and the answer will be a range. To make it reachable: a longer --time (noise falls about with the square root of the window), --metric cpu-per-txn (steadier than tps), CPU pinning of server and client, or --max-repeats %d",
			need, c.MaxRepeats, need)
		s.res.Estimate += "; " + s.res.Advice
	}
	s.logf("estimate: %s", s.res.Estimate)
	if s.cfg.OnEstimate != nil {
		s.cfg.OnEstimate(s.res.EstimatedRuns)
	}
}

func (s *Session) step(st Step) {
	s.res.Steps = append(s.res.Steps, st)
	if s.cfg.OnStep != nil {
		s.cfg.OnStep(st)
	}
}

func (s *Session) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// Result returns the session's result so far (the same value Run returns): the
// runs and steps recorded up to now.
func (s *Session) Result() *Result { return s.res }
