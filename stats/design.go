package stats

import (
	"fmt"
	"math"
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
// shift / sqrt(var(x) + var(y))): Phi(effect*sqrt(n*3/pi) - z(1-alpha/2)),
// the normal-theory power of the two-sample z test scaled by the Mann-Whitney
// test's asymptotic relative efficiency 3/pi under normal data (Noether 1987,
// "Sample size determination for some common nonparametric tests", JASA 82).
// It is 0 when n runs per side cannot reach p <= alpha at all (MinP).
func Power(effect float64, n int, alpha float64) float64 {
	if n < 1 || MinP(n, n) > alpha {
		return 0
	}
	z := math.Abs(effect)*math.Sqrt(float64(n)*3/math.Pi) - normalQuantile(1-alpha/2)
	return normalCDF(z)
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
// plus each later batch weighted by the chance that no earlier look decided.
func ExpectedN(effect float64, d Design) float64 {
	e := float64(d.N(1))
	decided := 0.0
	for k := 2; k <= d.Looks(); k++ {
		decided = math.Max(decided, Power(effect, d.N(k-1), d.LookAlpha(k-1)))
		e += float64(d.N(k)-d.N(k-1)) * (1 - decided)
	}
	return e
}

// Plan chooses the design of a decision whose effect (as for Power) was
// estimated beforehand: the smallest start in [minStart, max] whose first look
// has at least power 0.8 at its level (so most decisions end there), with
// batches of half the start (at least 2) after it. When no start reaches that,
// the start is the smallest that can reach its first look's level at all and
// Reachable reports false: the effect is too small for max runs per side.
func Plan(effect, alpha float64, minStart, max int) (d Design, reachable bool) {
	minStart = min(maxInt(minStart, 2), max)
	first := Design{}
	for n := minStart; n <= max; n++ {
		d := Design{Start: n, Batch: maxInt(2, (n+1)/2), Max: max, Alpha: alpha}
		if MinP(n, n) > d.LookAlpha(1) {
			continue
		}
		if first.Start == 0 {
			first = d
		}
		if Power(effect, n, d.LookAlpha(1)) >= 0.8 {
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
// power; at most 100000.
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
// pooled log residuals (robust to outliers; Rousseeuw & Croux 1993). Samples
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
	// sample (for odd sizes a zero residual that says nothing about spread);
	// the factor below corrects for that roughly, like n/(n-1) for a variance.
	return 1.4826 * Median(res) * math.Sqrt(float64(len(res))/float64(len(res)-used))
}
