package stats

import (
	"math"
	"sort"

	mstats "github.com/aclements/go-moremath/stats"
)

// MedianCI is the distribution-free confidence interval of the population median
// from order statistics: [x(k), x(n+1-k)] (1-based order statistics of the n
// values, in their unit) with the largest k whose coverage
// P(k <= B <= n-k) = 1 - 2*P(B <= k-1), B ~ Binomial(n, 1/2), is at least conf
// (Conover, Practical Nonparametric Statistics, 3rd ed., section 3.2;
// Hollander & Wolfe, Nonparametric Statistical Methods, section 3.6). The
// interval is equal-tailed, so its coverage is usually above conf (see
// MedianCIOrder for the exact figure); it needs no assumption about the
// distribution, and with ties its coverage is still at least conf.
//
// ok is false, and lo and hi are -Inf and +Inf, when even [x(1), x(n)] covers
// less than conf (n < 6 at 95%, n < 8 at 99%: benchstat's warning), or when
// conf is not in (0, 1). Values must not be NaN.
func MedianCI(xs []float64, conf float64) (lo, hi float64, ok bool) {
	k, _ := MedianCIOrder(len(xs), conf)
	if k == 0 {
		return math.Inf(-1), math.Inf(1), false
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[k-1], s[len(s)-k], true
}

// MedianCIOrder is the order statistic that MedianCI uses for n values at level
// conf: the largest k in 1..n/2 with coverage 1 - 2*P(B <= k-1) >= conf,
// B ~ Binomial(n, 1/2), and that coverage (the exact confidence of
// [x(k), x(n+1-k)] for continuous data). k is 0 (coverage 0) when no such k
// exists. The binomial distribution function is go-moremath's
// (github.com/aclements/go-moremath/stats.BinomialDist, via the regularized
// incomplete beta function); a relative tolerance of 1e-12 keeps a coverage equal
// to conf, such as 31/32 at conf 0.96875, from failing by rounding.
func MedianCIOrder(n int, conf float64) (k int, coverage float64) {
	if n < 2 || !(conf > 0 && conf < 1) {
		return 0, 0
	}
	b := mstats.BinomialDist{N: n, P: 0.5}
	for c := 1; c <= n/2; c++ {
		cov := 1 - 2*b.CDF(float64(c-1))
		if cov < conf*(1-1e-12) {
			break
		}
		k, coverage = c, cov
	}
	return k, coverage
}
