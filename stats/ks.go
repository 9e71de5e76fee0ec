package stats

import (
	"errors"
	"math"
	"sort"
)

// ksExactLimit is the largest n1*n2 for which KolmogorovSmirnov computes the
// exact p-value. The lattice-path recursion costs O(n1*n2) float operations and
// O(min(n1, n2)) memory (a few milliseconds at the limit), and it sums only
// positive terms, so it stays accurate for tiny p-values; beyond the limit the
// asymptotic distribution is close enough (n_eff >= about 500 for balanced
// samples).
const ksExactLimit = 1000000

// KolmogorovSmirnov is the two-sample Kolmogorov-Smirnov test of the null
// hypothesis that x and y come from the same distribution, against any
// difference (location, spread or shape). Units are those of the samples; only
// their order matters.
//
// d is the statistic sup_t |F1(t) - F2(t)| of the two empirical distribution
// functions, in [0, 1]; ties, within and across the samples, are handled (the
// empirical distributions are compared after each distinct value). p is the
// two-sided p-value P(D >= d) under the null hypothesis:
//   - for len(x)*len(y) <= 1e6, exact: the probability that a uniformly random
//     split of the pooled sample into groups of len(x) and len(y) gives a
//     statistic >= d, computed by the lattice-path recursion (Hodges 1958, "The
//     significance probability of the Smirnov two-sample test", Ark. Mat. 3; the
//     method of scipy's ks_2samp(method='exact')). With ties the recursion checks
//     the boundary only where the pooled sample changes value, so the p-value is
//     the exact permutation p-value conditional on the observed ties (scipy's
//     exact method ignores ties, which makes it conservative there);
//   - beyond, the limiting Kolmogorov distribution (Smirnov 1939):
//     p = Q(sqrt(n_eff)*d) with n_eff = n1*n2/(n1+n2) and
//     Q(l) = 2*sum_{k>=1} (-1)^(k-1) exp(-2 k^2 l^2), as R's ks.test(exact=FALSE);
//     with ties this p is conservative.
//
// It returns an error when either sample is empty or contains NaN.
func KolmogorovSmirnov(x, y []float64) (d, p float64, err error) {
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return math.NaN(), math.NaN(), errors.New("stats: Kolmogorov-Smirnov test of an empty sample")
	}
	xs := append([]float64(nil), x...)
	ys := append([]float64(nil), y...)
	for _, v := range xs {
		if math.IsNaN(v) {
			return math.NaN(), math.NaN(), errors.New("stats: Kolmogorov-Smirnov test of a sample with NaN")
		}
	}
	for _, v := range ys {
		if math.IsNaN(v) {
			return math.NaN(), math.NaN(), errors.New("stats: Kolmogorov-Smirnov test of a sample with NaN")
		}
	}
	sort.Float64s(xs)
	sort.Float64s(ys)

	// Walk the pooled sample one distinct value at a time. After value v, i of x
	// and j of y are <= v and F1-F2 = i/n1 - j/n2 = (i*n2 - j*n1)/(n1*n2), so the
	// statistic is an integer multiple of 1/(n1*n2): compare in integers.
	// check[t] marks the steps t = i+j after which the pooled sample changes value
	// (all steps when there are no ties).
	N := n1 + n2
	check := make([]bool, N+1)
	var dmax int64
	i, j := 0, 0
	for i < n1 || j < n2 {
		var v float64
		switch {
		case j == n2 || (i < n1 && xs[i] <= ys[j]):
			v = xs[i]
		default:
			v = ys[j]
		}
		for i < n1 && xs[i] == v {
			i++
		}
		for j < n2 && ys[j] == v {
			j++
		}
		check[i+j] = true
		if g := absInt64(int64(i)*int64(n2) - int64(j)*int64(n1)); g > dmax {
			dmax = g
		}
	}
	d = float64(dmax) / (float64(n1) * float64(n2))
	if int64(n1)*int64(n2) <= ksExactLimit {
		return d, ksExactP(n1, n2, dmax, check), nil
	}
	ne := float64(n1) * float64(n2) / float64(N)
	return d, kolmogorovQ(math.Sqrt(ne) * d), nil
}

// ksExactP is P(max over checked steps t of |i*n2 - j*n1| >= dmax) for a
// uniformly random lattice path from (0, 0) to (n1, n2), where (i, j) is the
// path's position after t = i+j steps and check[t] says whether step t is
// checked. It propagates the probability of the paths that have stayed inside
// the band so far, step by step (a step right from (i, j) has probability
// (n1-i)/(n1+n2-i-j)), and adds the probability of the paths that reach the
// boundary at a checked step.
func ksExactP(n1, n2 int, dmax int64, check []bool) float64 {
	if n1 > n2 { // the statistic is symmetric; keep the inner loop short
		n1, n2 = n2, n1
	}
	N := n1 + n2
	q := make([]float64, n1+1) // q[i]: probability at (i, t-i), inside so far
	q[0] = 1
	out := 0.0
	for t := 0; t < N; t++ {
		rest := float64(N - t)
		lo, hi := max(0, t-n2), min(t, n1) // valid i at step t
		// Step t -> t+1 in place, from high i down so q[i] is read before it is
		// overwritten: q'[i] = q[i]*P(up from (i, t-i)) + q[i-1]*P(right from (i-1, t-i+1)).
		if hi+1 <= n1 {
			q[hi+1] = q[hi] * float64(n1-hi) / rest
		}
		for i := hi; i >= lo; i-- {
			v := q[i] * float64(n2-(t-i)) / rest
			if i > lo {
				v += q[i-1] * float64(n1-(i-1)) / rest
			}
			q[i] = v
		}
		if lo > 0 {
			q[lo-1] = 0
		}
		if !check[t+1] {
			continue
		}
		for i := max(0, t+1-n2); i <= min(t+1, n1); i++ {
			j := t + 1 - i
			if absInt64(int64(i)*int64(n2)-int64(j)*int64(n1)) >= dmax {
				out += q[i]
				q[i] = 0
			}
		}
	}
	return math.Min(out, 1)
}

// kolmogorovQ is the survival function of the Kolmogorov distribution,
// P(K > l) with K = sup |B(t)| of a Brownian bridge (Kolmogorov 1933). For l >= 1
// it sums 2*sum_{k>=1} (-1)^(k-1) exp(-2 k^2 l^2); below, where that series
// converges slowly, it uses the equivalent form
// P(K <= l) = sqrt(2 pi)/l * sum_{k>=1} exp(-(2k-1)^2 pi^2 / (8 l^2))
// (as R's pkstwo does).
func kolmogorovQ(l float64) float64 {
	switch {
	case math.IsNaN(l):
		return math.NaN()
	case l <= 0.1: // P(K <= 0.1) is about 1e-105
		return 1
	case l < 1:
		s := 0.0
		for k := 1; k < 100; k++ {
			m := float64(2*k - 1)
			term := math.Exp(-m * m * math.Pi * math.Pi / (8 * l * l))
			s += term
			if term < 1e-17*s {
				break
			}
		}
		return 1 - math.Sqrt(2*math.Pi)/l*s
	default:
		s, sign := 0.0, 1.0
		for k := 1; k < 100; k++ {
			kf := float64(k)
			term := math.Exp(-2 * kf * kf * l * l)
			s += sign * term
			sign = -sign
			if term < 1e-17*math.Abs(s) || term == 0 {
				break
			}
		}
		return math.Max(0, math.Min(1, 2*s))
	}
}

func absInt64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
