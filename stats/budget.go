package stats

import "math"

// Budget splits the session's error probability over its decisions so that the
// whole answer is wrong with probability at most 1-Confidence (a union bound,
// Bonferroni): every step gets (1-Confidence)/Steps, and within a step the
// repeated looks at growing data (sequential testing) split the step's share:
// the first look gets half, the remaining looks share the other half equally.
// Spending more on the first look lets a large effect be decided with the
// starting runs; the split is fixed before any data is seen, so looking again is
// valid (alpha spending with a Bonferroni bound; conservative, never
// anti-conservative).
type Budget struct {
	Confidence float64 // e.g. 0.95
	Steps      int     // decisions in the session (see ExpectedSteps)
	Looks      int     // looks per decision (see Looks)
}

// ExpectedSteps is the number of decisions of a bisection over candidates
// commits: ceil(log2(candidates)) midpoint classifications, plus the endpoint
// comparison, the culprit's confirmation against its parent, and one spare for a
// skipped commit.
func ExpectedSteps(candidates int) int {
	if candidates < 1 {
		candidates = 1
	}
	return int(math.Ceil(math.Log2(float64(candidates)))) + 3
}

// Looks is the number of looks a decision takes when it starts with repeats runs
// per side and adds batch runs until maxRepeats.
func Looks(repeats, maxRepeats, batch int) int {
	if maxRepeats <= repeats || batch <= 0 {
		return 1
	}
	return 1 + int(math.Ceil(float64(maxRepeats-repeats)/float64(batch)))
}

// MidpointAlpha is the error probability allowed for the k-th (1-based)
// midpoint decision of a session, so that the session's decisions never spend
// more than 1-Confidence however many midpoints skips make necessary: the
// endpoints and the confirmation get StepAlpha each, the first Steps-3
// midpoints StepAlpha each, and later ones (after undecided skips) half of the
// last remaining StepAlpha each (StepAlpha/2, /4, ...), which sums to the
// spare step's share. k < 1 is taken as 1.
func (b Budget) MidpointAlpha(k int) float64 {
	a := b.StepAlpha()
	regular := max(b.Steps-3, 1)
	if k <= regular {
		return a
	}
	return a * math.Pow(0.5, float64(k-regular))
}

// StepAlpha is the error probability allowed for one decision.
func (b Budget) StepAlpha() float64 {
	s := b.Steps
	if s < 1 {
		s = 1
	}
	return (1 - b.Confidence) / float64(s)
}

// LookAlpha is the significance level of look i (1-based) of a decision.
func (b Budget) LookAlpha(i int) float64 {
	a := b.StepAlpha()
	if b.Looks <= 1 {
		return a
	}
	if i <= 1 {
		return a / 2
	}
	return a / 2 / float64(b.Looks-1)
}
