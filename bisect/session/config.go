package session

import (
	"fmt"
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
	// TPMC is TPC-C's New-Order transactions per minute.
	TPMC Metric = "tpmc"
	// CPUPerNewOrder is the server's CPU time per TPC-C New-Order.
	CPUPerNewOrder Metric = "cpu-per-new-order"
)

// Metrics lists the metrics --metric accepts (a workload measures some of
// them: bench.Workload's Metrics).
var Metrics = []Metric{TPS, QPS, P95, P99, CPUPerTxn, TPMC, CPUPerNewOrder}

// Value returns the metric of a run: tps and qps per second, p95 and p99
// event latency in milliseconds, server CPU per transaction or per
// New-Order in microseconds, tpmC per minute.
func (m Metric) Value(r bisect.Run) float64 {
	switch m {
	case CPUPerTxn:
		return float64(r.CPUPerTxn) / float64(time.Microsecond)
	case CPUPerNewOrder:
		return float64(r.CPUPerNewOrder) / float64(time.Microsecond)
	case TPMC:
		return r.TPMC
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
	case CPUPerNewOrder:
		return "us/New-Order"
	case TPMC:
		return "tpmC"
	case QPS:
		return "qps"
	case P95, P99:
		return "ms"
	}
	return "tps"
}

// Label is the metric as a table's header names it: tpmC for tpmc, else
// its name.
func (m Metric) Label() string {
	if m == TPMC {
		return "tpmC"
	}
	return string(m)
}

// HigherIsBetter tells the metric's direction.
func (m Metric) HigherIsBetter() bool { return m == TPS || m == QPS || m == TPMC }

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

	// Hosts are the runner hosts a probabilistic search places its runs on
	// (bisect.HostMeasurer): each round gives every host one run, of a
	// commit of its own (NextK over the hosts) or of a reference it needs,
	// so that each host measures its own references and the posterior
	// keeps a level per host. The endpoints' and the head-to-head's
	// comparisons run a pair on every host in each turn and compare runs
	// at their host's level. Empty or one: this machine, as Jobs says.
	Hosts []string `json:",omitempty"`

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
	// (BudgetRuns), times the runner hosts.
	MaxRuns int `json:",omitempty"`
	// BuildEffect is the spread of a build's own level (log scale, 0.01 =
	// 1%: posterior.Model.SetBuildEffect), from an A/A calibration; 0 for
	// none.
	BuildEffect float64 `json:",omitempty"`
	// BuildRuns is what building a commit costs, in runs (a build's time over
	// a run's), for the probabilistic search's choice between a commit already
	// built and a new one; 0 measures it (the time Prepare takes), assuming
	// 10 until a build has been timed.
	BuildRuns float64 `json:"-"`

	// Decided is the number of midpoint decisions an earlier process of this
	// bisection took (perfbisect run: one process per commit), so that the
	// error budget (stats.Budget.MidpointAlpha) counts them.
	Decided int `json:"-"`

	// Replay holds the events of an interrupted run of this same session (same
	// endpoints and settings): the session uses them, in order, instead of
	// measuring, for as long as it asks for the same things in the same order
	// (it does, being deterministic given its measurements), then measures live.
	Replay []Event `json:"-"`
	// Hooks are the session's callbacks (the store, progress output).
	Hooks Hooks `json:"-"`
}

// Hooks are what a session calls as it goes; each may be nil.
type Hooks struct {
	// OnStep, when set, is called after each decision (for progress output and
	// the store).
	OnStep func(Step)

	// Record, when set, is called with every event measured live, before the
	// session uses it, with its sequence number (len(Replay) for the first live
	// one when the whole replay was used); an error stops the session, so that
	// nothing is decided on a run the store does not hold.
	Record func(seq int, e Event) error
	// Diverged, when set, is called when the session stops following Replay at
	// event seq (the settings or the code changed): the events from seq on are
	// no longer part of this session and new ones will be recorded in their place.
	Diverged func(seq int)
	// Logf, when set, receives progress lines.
	Logf func(format string, args ...any)
	// OnEstimate, when set, gets the pre-flight estimate of the session's runs
	// (Result.EstimatedRuns, replayed and earlier runs included) once the
	// endpoints are measured: for progress displays.
	OnEstimate func(runs int)
	// Setting, when set, spells a setting's name (max-repeats, time,
	// no-confirm) as the caller's user knows it in notes, advice and the
	// answer's why: the command line gives usage.Flag ("--max-repeats").
	// Nil: the name as it is.
	Setting func(name string) string
}

// setting is name as the caller spells it (Hooks.Setting).
func (c *Config) setting(name string) string {
	if c.Hooks.Setting != nil {
		return c.Hooks.Setting(name)
	}
	return name
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
		names := make([]string, len(Metrics))
		for i, m := range Metrics {
			names[i] = string(m)
		}
		return bisect.Usagef("{metric} %q: want one of %s", c.Metric, strings.Join(names, ", "))
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

// Verdict is what a step decided: a commit's mark for a midpoint (measured
// or marked by hand), the comparison's verdict (stats.Verdict's words) for
// the endpoints, a compare and the confirmation. It is stored as its string.
type Verdict string

// Verdicts of a step.
const (
	VerdictGood      Verdict = "good"
	VerdictBad       Verdict = "bad"
	VerdictSkip      Verdict = "skip"
	VerdictDifferent Verdict = "DIFFERENT"
	VerdictSame      Verdict = "SAME"
	VerdictUnknown   Verdict = "UNKNOWN"
)

// MarkVerdict is the verdict of a midpoint given mark m (bisect.Good, Bad,
// Skip).
func MarkVerdict(m bisect.Mark) Verdict { return Verdict(m.String()) }

// CompareVerdict is the verdict of a step decided by a comparison.
func CompareVerdict(v stats.Verdict) Verdict { return Verdict(v.String()) }

// Mark is the mark a midpoint's verdict gives its commit; false for a
// comparison's verdict.
func (v Verdict) Mark() (bisect.Mark, bool) {
	switch v {
	case VerdictGood:
		return bisect.Good, true
	case VerdictBad:
		return bisect.Bad, true
	case VerdictSkip:
		return bisect.Skip, true
	}
	return bisect.Unmarked, false
}

// Step is one decision with its evidence.
type Step struct {
	Role    Role
	Commit  string  // the candidate (midpoint), the bad endpoint, or the culprit (confirm)
	Against string  // good endpoint, or the culprit's parent (confirm)
	Verdict Verdict // good, bad, skip (midpoint); DIFFERENT, SAME, UNKNOWN (endpoints, compare, confirm)
	Reason  string  // the rule that fired, or why the commit was skipped
	Need    string  // what more data would have needed, when undecided
	Note    string
	Compare *stats.Comparison     `json:",omitempty"`
	Class   *stats.Classification `json:",omitempty"`
	Looks   int
	// Hand is set on a verdict given by hand (perfbisect mark): Reason
	// holds the user's reason, and no run stands behind it.
	Hand bool `json:",omitempty"`
}

// Outcome is how a session ended.
type Outcome string

// Outcomes. Found names the first bad commit; Ambiguous a range of
// candidates; NoRegression says the endpoints do not show the change looked
// for (they are the same within the threshold, or bad is the better one);
// Undecided says the endpoints could not be told apart at the repeat limit
// although bad leaned worse and a change of the threshold was not excluded
// (Config.Unresolved): the run noise was too large for the change, and no
// search was made (more runs, less noise, or a larger threshold needed).
const (
	Found        Outcome = "found"
	NoRegression Outcome = "no-regression"
	Ambiguous    Outcome = "ambiguous"
	Undecided    Outcome = "undecided"
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
	// EstimatedRunsHigh is the same estimate at the top of the noise's 90%
	// interval from the endpoints' runs (the probabilistic search; 0 when
	// not made): a few runs measure the noise only roughly.
	EstimatedRunsHigh int
	Advice            string // what would help when the estimate is out of reach
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

// Unresolved reports whether a comparison that did not find the change
// (Changed false) leaves it open: the verdict is UNKNOWN, the shift's
// estimate leans the way looked for (lower tps, higher latency; the other
// way with Improvement) and its equivalence interval (the one-sided test
// of SAME, at the look's SameAlpha) reaches a change of Threshold or more
// that way. An UNKNOWN that leans the other way, or whose interval
// excludes a change of that size, is an answer: no such change reproduced.
func (c *Config) Unresolved(cmp stats.Comparison) bool {
	if cmp.Verdict != stats.Unknown {
		return false
	}
	iv := cmp.Equivalence
	if iv.Conf == 0 {
		iv = cmp.Shift // stored before the equivalence test had a level of its own
	}
	down := c.Metric.HigherIsBetter() != c.Improvement // the change looked for lowers the metric
	if down {
		return cmp.Shift.Est < 0 && iv.Lo <= -c.Threshold
	}
	return cmp.Shift.Est > 0 && iv.Hi >= c.Threshold
}
