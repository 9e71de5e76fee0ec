package stats

import (
	"fmt"
	"math"
	"strings"
)

// Verdict is the outcome of comparing two revisions.
type Verdict int

// Verdicts of Compare. UNKNOWN means "measure more"; at the repeat limit it
// stays UNKNOWN and the caller decides what that means (skip, inconclusive).
const (
	Unknown   Verdict = iota // not enough evidence either way
	Different                // a shift of at least the threshold, significant at alpha
	Same                     // a shift of the threshold's size is ruled out (two one-sided tests at the look's equivalence level)
)

func (v Verdict) String() string {
	switch v {
	case Different:
		return "DIFFERENT"
	case Same:
		return "SAME"
	default:
		return "UNKNOWN"
	}
}

// Comparison is the evidence behind a Verdict: what was compared, the numbers,
// the rule that fired and, when undecided, what more data would need.
type Comparison struct {
	NOld, NNew           int
	MedianOld, MedianNew float64       // in the metric's unit (tps: transactions/s)
	Shift                ShiftEstimate // relative change of new against old, at confidence 1-Alpha
	P                    float64       // two-sided Mann-Whitney U p-value
	Alpha                float64       // the significance level this look used
	// SameAlpha is the level of this look's equivalence test (each of the
	// two one-sided tests), and Equivalence the shift's interval at
	// 1-2*SameAlpha that it reads: SAME when that interval lies within
	// ±Threshold.
	SameAlpha   float64
	Equivalence ShiftEstimate
	// LeftOutOld and LeftOutNew are the runs the equivalence interval left
	// out as hiccups (Outliers at Noise); the test of DIFFERENT and the
	// shift's estimate use every run.
	LeftOutOld, LeftOutNew []float64 `json:",omitempty"`
	Threshold              float64   // smallest relative change that counts, e.g. 0.05
	Noise                  float64   // per-run noise of both sides on a log scale (LogNoise; about the CV), 0 when too few runs
	// MedianOldCI and MedianNewCI are distribution-free intervals of each
	// side's median at 1-Alpha (MedianCI); not OK when too few runs for that
	// level.
	MedianOldCI, MedianNewCI Interval
	// KSP is the two-sided two-sample Kolmogorov-Smirnov p-value: evidence
	// only (the verdict is Mann-Whitney's; two tests are not combined by taking
	// the smaller p), for a warning when the shapes of the two samples differ.
	KSP      float64
	Verdict  Verdict
	Rule     string   // the rule that fired, in words and numbers
	Need     string   // for UNKNOWN: what more data would need ("" otherwise)
	Warnings []string `json:",omitempty"` // what the user should know, in numbers
}

// Interval is a confidence interval [Lo, Hi]; OK is false (and Lo, Hi are 0)
// when the data are too few for its level.
type Interval struct {
	Lo, Hi float64
	OK     bool
}

func medianInterval(xs []float64, conf float64) Interval {
	lo, hi, ok := MedianCI(xs, conf)
	if !ok {
		return Interval{}
	}
	return Interval{Lo: lo, Hi: hi, OK: true}
}

// Compare decides whether new differs from old by at least threshold (relative,
// e.g. 0.05 for 5%) at significance level alpha, with the equivalence test at
// the same level: CompareAt(old, new, threshold, alpha, alpha).
func Compare(old, new []float64, threshold, alpha float64) Comparison {
	return CompareAt(old, new, threshold, alpha, alpha)
}

// CompareAt decides whether new differs from old by at least threshold
// (relative, e.g. 0.05 for 5%):
//   - DIFFERENT when the two-sided Mann-Whitney p <= alpha and the Hodges-Lehmann
//     relative shift is at least the threshold in size;
//   - SAME when a threshold-sized change either way is ruled out by two
//     one-sided tests at level sameAlpha each (Schuirmann 1987): the Moses
//     confidence interval of the shift at level 1-2*sameAlpha, of the runs
//     without hiccups (Outliers, both sides or neither), lies strictly
//     inside (-threshold, +threshold);
//   - UNKNOWN otherwise.
//
// A wrong DIFFERENT (no change, or one below the threshold) has probability
// at most alpha. A wrong SAME (a change of the threshold or more) has at
// most sameAlpha when no run is left out, and about that when runs are
// (simulated: stats' TestSameErrorWithOutliers). The two errors are of
// different truths, so each has its own level. Values must be positive
// (tps, or CPU time per transaction).
func CompareAt(old, new []float64, threshold, alpha, sameAlpha float64) Comparison {
	c := Comparison{NOld: len(old), NNew: len(new), Alpha: alpha, SameAlpha: sameAlpha, Threshold: threshold,
		MedianOld: Median(old), MedianNew: Median(new)}
	if n := LogNoise(old, new); !math.IsNaN(n) {
		c.Noise = n
	}
	if len(old) == 0 || len(new) == 0 {
		c.P = 1
		c.Rule = "no runs"
		c.Need = "runs on both sides"
		return c
	}
	c.P, _ = MannWhitney(old, new)
	d := pairDiffs(old, new) // one sort for both intervals
	c.Shift = shiftOf(d, len(old), len(new), 1-alpha)
	c.Equivalence = shiftOf(d, len(old), len(new), 1-2*sameAlpha)
	// One hiccup run a side stretches a distribution-free interval by its
	// n pairs: the equivalence interval is read without it. Both sides or
	// neither: a side whose spread is wide keeps its slow runs, and so must
	// the other, or the shift would lean towards SAME.
	keptOld, outOld, spreadOld := Outliers(old, c.Noise)
	keptNew, outNew, spreadNew := Outliers(new, c.Noise)
	if len(outOld)+len(outNew) > 0 && !spreadOld && !spreadNew {
		c.Equivalence = Shift(keptOld, keptNew, 1-2*sameAlpha)
		c.LeftOutOld, c.LeftOutNew = outOld, outNew
	}
	c.MedianOldCI, c.MedianNewCI = medianInterval(old, 1-alpha), medianInterval(new, 1-alpha)
	c.KSP = 1
	if _, p, err := KolmogorovSmirnov(old, new); err == nil {
		c.KSP = p
	}
	if c.KSP <= alpha && c.P > alpha {
		c.Warnings = append(c.Warnings, fmt.Sprintf("the two samples differ in shape (Kolmogorov-Smirnov p=%.2g <= %.2g) but not in location (Mann-Whitney p=%.2g): bimodal or unstable runs? Look at the runs before trusting the verdict", c.KSP, alpha, c.P))
	}
	switch {
	case c.P <= alpha && math.Abs(c.Shift.Est) >= threshold:
		c.Verdict = Different
		c.Rule = fmt.Sprintf("p=%.2g <= alpha=%.2g and |shift| %.1f%% >= threshold %.1f%%",
			c.P, alpha, 100*math.Abs(c.Shift.Est), 100*threshold)
		if threshold == 0 {
			c.Rule = fmt.Sprintf("p=%.2g <= alpha=%.2g, shift %+.1f%%", c.P, alpha, 100*c.Shift.Est)
		}
	case c.Equivalence.Bounded() && c.Equivalence.Lo > -threshold && c.Equivalence.Hi < threshold:
		c.Verdict = Same
		c.Rule = fmt.Sprintf("%.4g%% interval of the shift [%+.1f%%, %+.1f%%] lies within ±%.1f%%",
			100*c.Equivalence.Conf, 100*c.Equivalence.Lo, 100*c.Equivalence.Hi, 100*threshold) + c.LeftOutText()
	default:
		c.Verdict = Unknown
		c.Rule = fmt.Sprintf("p=%.2g, shift %+.1f%% [%s]", c.P, 100*c.Shift.Est, c.Shift.intervalText())
		c.Need = need(len(old), len(new), alpha, c.Shift, threshold)
	}
	return c
}

// LeftOutText names the runs the equivalence interval left out, as a clause
// to append to a sentence that states that interval ("" for none). When
// they are of one side only it says that occasional hiccups of that side
// are not what the interval rules out.
func (c Comparison) LeftOutText() string {
	if len(c.LeftOutOld)+len(c.LeftOutNew) == 0 {
		return ""
	}
	side := func(name string, xs []float64, median float64) string {
		if len(xs) == 0 {
			return ""
		}
		runs := make([]string, len(xs))
		for i, x := range xs {
			runs[i] = fmt.Sprintf("%.4g (%+.0f%%)", x, 100*(x/median-1))
		}
		return fmt.Sprintf("; %s %s", name, strings.Join(runs, ", "))
	}
	runs := "1 run"
	if n := len(c.LeftOutOld) + len(c.LeftOutNew); n > 1 {
		runs = fmt.Sprintf("%d runs", n)
	}
	oneSide := ""
	if len(c.LeftOutOld) == 0 || len(c.LeftOutNew) == 0 {
		oneSide = "; of one side only: a change that shows as occasional hiccups is not ruled out, look at the runs"
	}
	return fmt.Sprintf(", %s left out as more than %g noise units from their side's median%s%s%s",
		runs, OutlierFence, side("old", c.LeftOutOld, c.MedianOld), side("new", c.LeftOutNew, c.MedianNew), oneSide)
}

// need says, in numbers the user can act on, why a comparison is undecided.
func need(n1, n2 int, alpha float64, s ShiftEstimate, threshold float64) string {
	if mp := MinP(n1, n2); mp > alpha {
		return fmt.Sprintf("%d vs %d runs cannot reach p <= %.2g (best possible %.2g): need >= %d runs per side",
			n1, n2, alpha, mp, RunsNeeded(alpha))
	}
	if !s.Bounded() {
		return fmt.Sprintf("too few runs for a %.4g%% interval of the shift", 100*s.Conf)
	}
	return fmt.Sprintf("the %.4g%% interval [%+.1f%%, %+.1f%%] neither excludes 0 with a shift beyond ±%.1f%% nor fits inside ±%.1f%%: more runs (or less noise) needed",
		100*s.Conf, 100*s.Lo, 100*s.Hi, 100*threshold, 100*threshold)
}

func (s ShiftEstimate) intervalText() string {
	if !s.Bounded() {
		return fmt.Sprintf("%.4g%% interval unbounded", 100*s.Conf)
	}
	return fmt.Sprintf("%.4g%% interval %+.1f%%..%+.1f%%", 100*s.Conf, 100*s.Lo, 100*s.Hi)
}
