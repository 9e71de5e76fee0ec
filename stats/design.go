package stats

import (
	"fmt"
	"math"
	"sync"

	mstats "github.com/aclements/go-moremath/stats"
)

// Design is the group-sequential plan of one decision, fixed before its data
// are seen: looks after Start runs per side (or blocks), then every Batch more,
// up to Max; the decision's error Alpha is spent over the looks with a
// Bonferroni bound (the first look gets half, the remaining looks share the
// other half equally). Because the schedule and the split are fixed in advance
// and the per-look errors sum to Alpha, looking again after more runs keeps the
// decision's error at most Alpha whatever the correlation between looks
// (conservative alpha spending; Jennison & Turnbull, Group Sequential Methods,
// 2000, ch. 7, with the Bonferroni bound in place of the exact joint
// distribution).
type Design struct {
	Start, Batch, Max int     // runs per side (blocks) at the first look, added per look, limit
	Alpha             float64 // the decision's error probability
}

// Looks is the number of looks of the design (at least 1).
func (d Design) Looks() int { return Looks(d.Start, d.Max, d.Batch) }

// N is the number of runs per side (or blocks) at look i (1-based), at most Max.
func (d Design) N(look int) int {
	if look < 1 {
		look = 1
	}
	return min(d.Start+(look-1)*max(d.Batch, 1), max(d.Max, d.Start))
}

// LookAlpha is the significance level of look i (1-based).
func (d Design) LookAlpha(look int) float64 {
	k := d.Looks()
	if k <= 1 {
		return d.Alpha
	}
	if look <= 1 {
		return d.Alpha / 2
	}
	return d.Alpha / 2 / float64(k-1)
}

// SameAlpha is the level of look i's equivalence test (each one-sided
// test of Compare's SAME): the same at every look, Pocock's level for the
// design's looks (PocockLevel), so that a wrong SAME at any look has
// probability at most Alpha. Unlike LookAlpha it keeps no half for the
// first look: that half is there for MinP (a large change decided at 6
// runs a side), and ruling a change out within the threshold takes many
// runs whatever the level.
func (d Design) SameAlpha(look int) float64 {
	ns := make([]int, d.Looks())
	for k := range ns {
		ns[k] = d.N(k + 1)
	}
	return PocockLevel(ns, d.Alpha)
}

// String describes the design in one line.
func (d Design) String() string {
	if d.Looks() == 1 {
		return fmt.Sprintf("%d runs per side, alpha %.2g", d.Start, d.Alpha)
	}
	return fmt.Sprintf("%d runs per side, then +%d per look up to %d (%d looks), alpha %.2g (%.2g at the first look, %.2g at each later one)",
		d.Start, d.Batch, d.Max, d.Looks(), d.Alpha, d.LookAlpha(1), d.LookAlpha(2))
}

// normalCDF and normalQuantile are the standard normal distribution's.
func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

func normalQuantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }

// Power is the approximate probability that a two-sided Mann-Whitney test at
// level alpha with n runs on each side detects a location shift of effect
// standard deviations of the difference of one run from each side (effect =
// shift / sqrt(var(x) + var(y)), normal runs of equal variance). The critical
// value of U comes from its exact null distribution (so the small samples'
// discreteness counts), and U under the shift is taken as normal with its
// exact mean n^2*q and variance n^2*(q(1-q) + 2(n-1)(r - q^2)), where
// q = P(X > Y) = Phi(-effect) and r = P(X > Y, X > Y') is a bivariate normal
// probability with correlation 1/2 (Lehmann, Nonparametrics: Statistical
// Methods Based on Ranks, 1975, sections 2.3 and 2.4). Within a few points of
// simulated power for n >= 8. It is 0 when n runs per side cannot reach
// p <= alpha at all (MinP).
func Power(effect float64, n int, alpha float64) float64 {
	crit, ok := criticalU(n, alpha)
	if !ok {
		return 0
	}
	e := math.Abs(effect)
	q := normalCDF(-e)
	r := bivariateNormalCDF(-e, -e, 0.5)
	nn := float64(n * n)
	v := nn * (q*(1-q) + 2*float64(n-1)*(r-q*q))
	if v <= 0 {
		if nn*q <= crit {
			return 1
		}
		return 0
	}
	return normalCDF((crit + 0.5 - nn*q) / math.Sqrt(v))
}

type critKey struct {
	n1, n2 int
	alpha  float64
}

var critCache sync.Map // critKey -> float64 (-1: none)

// exactUpTo is the largest n per side for which criticalU uses the exact null
// distribution of U (go-moremath's, whose cost grows steeply with n); beyond
// it U's null distribution is normal to within a unit of the critical value.
const exactUpTo = 25

// criticalU is the largest u with 2*P(U <= u) <= alpha under the null
// hypothesis for n runs per side (the two-sided exact test rejects at U <= u);
// false when even u = 0 does not reach alpha. Exact for n <= exactUpTo (a
// binary search over the exact CDF), the normal approximation with continuity
// correction beyond.
func criticalU(n int, alpha float64) (float64, bool) { return criticalU2(n, n, alpha) }

// criticalU2 is criticalU for n1 and n2 runs (the Moses interval of Shift
// uses it too).
func criticalU2(n1, n2 int, alpha float64) (float64, bool) {
	if n1 < 1 || n2 < 1 || MinP(n1, n2) > alpha {
		return 0, false
	}
	k := critKey{n1, n2, alpha}
	if v, ok := critCache.Load(k); ok {
		return v.(float64), true
	}
	var c float64
	if n1 <= exactUpTo && n2 <= exactUpTo {
		d := mstats.UDist{N1: n1, N2: n2}
		lo, hi := 0, n1*n2/2 // 2*CDF(lo) <= alpha; find the largest such u
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if 2*d.CDF(float64(mid)) <= alpha {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		c = float64(lo)
	} else {
		nn := float64(n1 * n2)
		c = math.Max(0, math.Floor(nn/2-0.5-normalQuantile(1-alpha/2)*math.Sqrt(nn*float64(n1+n2+1)/12)))
	}
	critCache.Store(k, c)
	return c, true
}

// bivariateNormalCDF is P(Z1 <= a, Z2 <= b) for standard normals with
// correlation rho (|rho| < 1), by Simpson's rule over z1 of
// phi(z1) * Phi((b - rho*z1) / sqrt(1-rho^2)).
func bivariateNormalCDF(a, b, rho float64) float64 {
	const lo, steps = -9.0, 400
	if a <= lo {
		return 0
	}
	h := (a - lo) / steps
	s := math.Sqrt(1 - rho*rho)
	sum := 0.0
	for i := 0; i <= steps; i++ {
		z := lo + float64(i)*h
		w := 2.0
		switch {
		case i == 0 || i == steps:
			w = 1
		case i%2 == 1:
			w = 4
		}
		sum += w * math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) * normalCDF((b-rho*z)/s)
	}
	return sum * h / 3
}

// CanDecide reports whether some look of d can reach its level at all
// (MinP of its runs per side at most its alpha); a design that cannot would
// measure to its limit for nothing.
func (d Design) CanDecide() bool {
	for k := 1; k <= d.Looks(); k++ {
		if MinP(d.N(k), d.N(k)) <= d.LookAlpha(k) {
			return true
		}
	}
	return false
}

// SequentialPower is the approximate probability that design d decides a shift
// of effect (as for Power) at some look: the power of its best look.
func SequentialPower(effect float64, d Design) float64 {
	p := 0.0
	for k := 1; k <= d.Looks(); k++ {
		p = math.Max(p, Power(effect, d.N(k), d.LookAlpha(k)))
	}
	return p
}

// ExpectedN is the approximate expected number of runs per side (blocks) that
// design d spends on a shift of effect (as for Power): the first look's runs,
// plus each later batch weighted by the chance that no earlier look decided,
// taken as 1 minus the best Power of the earlier looks (a lower bound of the
// chance of having decided, since the looks are positively correlated).
// Checked against the simulated sessions of perfbisect simulate (median runs
// spent / estimated 0.98-1.03 from 3x to 10x the noise).
func ExpectedN(effect float64, d Design) float64 {
	e := float64(d.N(1))
	decided := 0.0
	for k := 2; k <= d.Looks(); k++ {
		decided = math.Max(decided, Power(effect, d.N(k-1), d.LookAlpha(k-1)))
		e += float64(d.N(k)-d.N(k-1)) * (1 - decided)
	}
	return e
}

// Plan chooses the design of a decision whose effect (as for Power; its
// absolute value is used, and 0 or NaN is simply unreachable) was estimated
// beforehand, for the decision's whole error alpha: the smallest start in
// [minStart, max] (minStart at least 2, at most max) whose first look has at
// least power 0.5 at its level, with batches of half the start (at least 2)
// after it. When no start reaches that, the start is the smallest that can
// reach its first look's level at all (or max, when none can: CanDecide then
// reports false), and reachable is false when even the whole design decides
// the effect with probability below 0.5.
func Plan(effect, alpha float64, minStart, max int) (d Design, reachable bool) {
	minStart = min(maxInt(minStart, 2), max)
	first := Design{}
	for n := minStart; n <= max; n++ {
		d := Design{Start: n, Batch: maxInt(2, int(float64(n)*planBatch+0.5)), Max: max, Alpha: alpha}
		if MinP(n, n) > d.LookAlpha(1) {
			continue
		}
		if first.Start == 0 {
			first = d
		}
		if Power(effect, n, d.LookAlpha(1)) >= planPower {
			return d, true
		}
	}
	if first.Start == 0 {
		first = Design{Start: max, Batch: 2, Max: max, Alpha: alpha}
	}
	return first, SequentialPower(effect, first) >= 0.5
}

// NeededN is the approximate number of runs per side a single look at level
// alpha needs to detect a shift of effect (as for Power) with probability
// power (0 < power < 1): the two-sample z test's n times pi/3 for the
// Mann-Whitney test's efficiency (Noether 1987), at least RunsNeeded(alpha).
// It is capped at 100000, which it also returns for effect 0.
func NeededN(effect, alpha, power float64) int {
	if effect == 0 {
		return 100000
	}
	z := normalQuantile(1-alpha/2) + normalQuantile(power)
	n := math.Ceil(z * z / (effect * effect) * math.Pi / 3)
	n = math.Max(n, float64(RunsNeeded(alpha)))
	return int(math.Min(n, 100000))
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// LogNoise estimates the per-run noise of runs on a log scale (about the
// coefficient of variation for small noise) from several samples at once, each
// centred on its own median: 1.4826 times the median absolute deviation of the
// pooled log residuals (robust to outliers; Rousseeuw & Croux 1993), times
// N/(N-samples) for the residuals' shrinkage towards their own medians. Samples
// with fewer than 2 runs are left out; NaN when fewer than 3 residuals remain
// or a value is not positive.
func LogNoise(samples ...[]float64) float64 {
	var res []float64
	used := 0
	for _, s := range samples {
		if len(s) < 2 {
			continue
		}
		used++
		l := make([]float64, len(s))
		for i, v := range s {
			if !(v > 0) {
				return math.NaN()
			}
			l[i] = math.Log(v)
		}
		m := Median(l)
		for _, v := range l {
			res = append(res, math.Abs(v-m))
		}
	}
	if len(res) < 3 {
		return math.NaN()
	}
	// Centring each sample on its own median uses up about one value per
	// sample (for odd sizes a zero residual that says nothing about spread)
	// and pulls the others in; the factor N/(N-samples) corrects for that
	// (simulated: 2 samples of 6 log-normal runs average 0.96 of the true
	// noise with it, 0.88 without).
	return 1.4826 * Median(res) * float64(len(res)) / float64(len(res)-used)
}

// The plan's first look aims at power planPower, and later looks add
// planBatch times the start. Chosen on the simulated grid (perfbisect
// simulate): first-look power 0.3, 0.5, 0.65, 0.8 and 0.9 with batches of a
// third to all of the start gave the same accuracy within noise; 0.5 and a
// half spent the fewest runs at 4x-6x noise without losing accuracy at 3x.
const (
	planPower = 0.5
	planBatch = 0.5
)
