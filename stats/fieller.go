package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Fieller is Fieller's confidence interval for the ratio of means
// rho = E[A]/E[B] of n paired observations (a[i], b[i]) (Fieller 1954, "Some
// problems in interval estimation", J. R. Stat. Soc. B 16, 175-185; the
// paired-sample form as in von Luxburg & Franz 2009, "A geometric approach to
// confidence sets for ratios", Theorem 3). The ratio is unitless when A and B
// share a unit.
//
// est is mean(a)/mean(b) (±Inf or NaN when mean(b) is 0). The confidence set at
// level conf is every r for which the one-sample t-test of mean(A - r*B) = 0 is
// not rejected at level 1-conf:
//
//	(mean(a) - r*mean(b))^2 <= t^2 * (Vaa - 2r*Vab + r^2*Vbb)
//
// where Vaa, Vab, Vbb are the sample (co)variances divided by n and t is the
// 1-(1-conf)/2 quantile of Student's t with n-1 degrees of freedom (gonum's
// distuv.StudentsT). It is exact, not asymptotic, when the pairs are
// independent draws from a bivariate normal distribution. Three cases:
//   - mean(b) significantly non-zero (the t-test of mean(B) = 0 rejects at
//     1-conf, i.e. mean(b)^2 > t^2*Vbb): the set is the interval [lo, hi], which
//     contains est; bounded is true;
//   - otherwise the set is unbounded: the complement of an interval, or the whole
//     line. bounded is false and lo, hi are -Inf, +Inf (the exclusive set is of no
//     use for placing a value and is not reported).
//
// Fewer than 2 pairs give est = NaN (or mean(a)/mean(b) for one pair) and an
// unbounded set. It panics when a and b differ in length or conf is not in
// (0, 1).
func Fieller(a, b []float64, conf float64) (est, lo, hi float64, bounded bool) {
	if len(a) != len(b) {
		panic("stats: Fieller: a and b differ in length")
	}
	if !(conf > 0 && conf < 1) {
		panic("stats: Fieller: confidence level not in (0, 1)")
	}
	n := len(a)
	lo, hi = math.Inf(-1), math.Inf(1)
	if n == 0 {
		return math.NaN(), lo, hi, false
	}
	nf := float64(n)
	var ma, mb float64
	for i := range a {
		ma += a[i]
		mb += b[i]
	}
	ma /= nf
	mb /= nf
	est = ma / mb
	if n < 2 {
		return est, lo, hi, false
	}
	var saa, sab, sbb float64
	for i := range a {
		da, db := a[i]-ma, b[i]-mb
		saa += da * da
		sab += da * db
		sbb += db * db
	}
	// Variances and covariance of the means: sample (co)variance / n.
	div := (nf - 1) * nf
	vaa, vab, vbb := saa/div, sab/div, sbb/div

	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nf - 1}.Quantile(1 - (1-conf)/2)
	t2 := t * t
	// The set is {r : A r^2 - 2 B r + C <= 0}.
	qa := mb*mb - t2*vbb
	qb := ma*mb - t2*vab
	qc := ma*ma - t2*vaa
	if !(qa > 0) {
		return est, lo, hi, false
	}
	// est satisfies the inequality (its left side is 0), so for A > 0 the
	// discriminant is >= 0 up to rounding.
	disc := math.Max(0, qb*qb-qa*qc)
	// Roots without cancellation: q = B + sign(B) sqrt(disc); roots q/A and C/q.
	q := qb + math.Copysign(math.Sqrt(disc), qb)
	if q == 0 { // B = 0 and disc = 0, hence C = 0: the single point 0
		return est, 0, 0, true
	}
	r1, r2 := q/qa, qc/q
	return est, math.Min(r1, r2), math.Max(r1, r2), true
}

// PositionEstimate is where a candidate sits between good and bad on the
// metric's scale: 1 = like good, 0 = like bad, 0.5 = halfway, below 0 or above 1
// = beyond an end. [Lo, Hi] is Fieller's interval at confidence Conf; when
// Bounded is false the good-bad difference is not significant at that level and
// Lo, Hi are -Inf, +Inf.
type PositionEstimate struct {
	Est, Lo, Hi float64 // positions: (cand - bad) / (good - bad)
	Conf        float64 // confidence level of [Lo, Hi], e.g. 0.99
	Bounded     bool
}

// Position estimates where a candidate sits between good and bad from n blocks,
// each one run of good, bad and candidate measured together (good[i], bad[i],
// cand[i] are block i, in the metric's unit; the direction of the metric does
// not matter). With A_i = cand_i - bad_i and B_i = good_i - bad_i, the position
// is mean(A)/mean(B) = (mean(cand) - mean(bad)) / (mean(good) - mean(bad)), and
// its interval is Fieller's for paired observations (see Fieller) with n-1
// degrees of freedom. Differences within a block cancel a drift of the machine
// shared by the block's runs. The interval is exact for normal runs; for
// skewed or heavy-tailed runs it is approximate (means, not medians).
//
// Bounded is true exactly when the paired t-test of good against bad rejects at
// 1-conf. It panics when the slices differ in length or conf is not in (0, 1).
func Position(good, bad, cand []float64, conf float64) PositionEstimate {
	if len(good) != len(bad) || len(good) != len(cand) {
		panic("stats: Position: good, bad and cand differ in length")
	}
	a, b := make([]float64, len(good)), make([]float64, len(good))
	for i := range good {
		a[i] = cand[i] - bad[i]
		b[i] = good[i] - bad[i]
	}
	est, lo, hi, ok := Fieller(a, b, conf)
	return PositionEstimate{Est: est, Lo: lo, Hi: hi, Conf: conf, Bounded: ok}
}
