package stats

import (
	"errors"
	"math"

	mstats "github.com/aclements/go-moremath/stats"
)

// MannWhitney returns the two-sided p-value of the Mann-Whitney U test (Wilcoxon
// rank-sum) of the null hypothesis that x and y come from the same distribution.
// It uses the exact null distribution (with ties, Klotz 1966) for samples up to
// 50 (25 with ties) and the normal approximation with tie and continuity
// correction beyond (Mann & Whitney 1947; implementation:
// github.com/aclements/go-moremath/stats). When every value is equal, p is 1.
// It returns an error when either sample is empty.
func MannWhitney(x, y []float64) (float64, error) {
	r, err := mstats.MannWhitneyUTest(x, y, mstats.LocationDiffers)
	if errors.Is(err, mstats.ErrSamplesEqual) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	return r.P, nil
}

// MinP is the smallest two-sided p-value the Mann-Whitney U test can reach with
// samples of n1 and n2 runs (complete separation, no ties): 2 / C(n1+n2, n1).
// It tells the user how many runs a decision at a given alpha needs at least.
func MinP(n1, n2 int) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	lg := func(n int) float64 { v, _ := math.Lgamma(float64(n) + 1); return v }
	return math.Min(1, 2*math.Exp(lg(n1)+lg(n2)-lg(n1+n2)))
}

// RunsNeeded is the smallest n such that n runs on each side can reach a
// two-sided Mann-Whitney p <= alpha (at most 1000).
func RunsNeeded(alpha float64) int {
	for n := 2; n < 1000; n++ {
		if MinP(n, n) <= alpha {
			return n
		}
	}
	return 1000
}
