package stats

import (
	"encoding/json"
	"math"
	"sort"
)

// ShiftEstimate is a relative location shift of sample y against sample x: y is
// about (1+Est) times x. Lo and Hi bound it at the confidence level Conf; they
// are -1 and +Inf when the samples are too small for that level.
type ShiftEstimate struct {
	Est, Lo, Hi float64 // relative: -0.10 is 10% lower
	Conf        float64 // confidence level of [Lo, Hi], e.g. 0.99
}

// MarshalJSON writes an unbounded end as null (JSON has no infinity).
func (s ShiftEstimate) MarshalJSON() ([]byte, error) {
	type plain struct {
		Est    float64
		Lo, Hi *float64
		Conf   float64
	}
	p := plain{Est: s.Est, Conf: s.Conf}
	if math.IsNaN(p.Est) {
		p.Est = 0
	}
	if s.Bounded() {
		p.Lo, p.Hi = &s.Lo, &s.Hi
	}
	return json.Marshal(p)
}

// UnmarshalJSON reads what MarshalJSON wrote (null ends: unbounded).
func (s *ShiftEstimate) UnmarshalJSON(b []byte) error {
	var p struct {
		Est    float64
		Lo, Hi *float64
		Conf   float64
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = ShiftEstimate{Est: p.Est, Conf: p.Conf, Lo: -1, Hi: math.Inf(1)}
	if p.Lo != nil && p.Hi != nil {
		s.Lo, s.Hi = *p.Lo, *p.Hi
	}
	return nil
}

// Bounded reports whether the interval is finite (the samples are large enough
// for the confidence level).
func (s ShiftEstimate) Bounded() bool { return !math.IsInf(s.Hi, 1) && s.Lo > -1 }

// Shift estimates the relative shift of y against x (positive values) with the
// Hodges-Lehmann estimator on logarithms: the median of the n1*n2 pairwise
// differences log(y_j) - log(x_i), mapped back with exp(d)-1. Its confidence
// interval at level conf is the distribution-free Moses interval: the k-th
// smallest and k-th largest pairwise difference, with k from the null
// distribution of the Mann-Whitney U statistic (Hollander & Wolfe, Nonparametric
// Statistical Methods, 3rd ed., section 4.3). Non-positive values are invalid.
func Shift(x, y []float64, conf float64) ShiftEstimate {
	return shiftOf(pairDiffs(x, y), len(x), len(y), conf)
}

// pairDiffs is the n1*n2 pairwise differences log(y_j) - log(x_i), sorted.
func pairDiffs(x, y []float64) []float64 {
	d := make([]float64, 0, len(x)*len(y))
	for _, a := range x {
		for _, b := range y {
			d = append(d, math.Log(b)-math.Log(a))
		}
	}
	sort.Float64s(d)
	return d
}

// shiftOf is Shift from the sorted pairwise differences d of samples of
// n1 and n2 runs, so that one sort serves intervals at several levels.
func shiftOf(d []float64, n1, n2 int, conf float64) ShiftEstimate {
	out := ShiftEstimate{Conf: conf, Lo: -1, Hi: math.Inf(1)}
	if n1 == 0 || n2 == 0 {
		out.Est = math.NaN()
		return out
	}
	out.Est = math.Expm1(median(d))
	// k = the largest k with P(U <= k-1) <= (1-conf)/2; the interval is
	// [d(k), d(N+1-k)] with 1-based order statistics.
	k := 0
	if crit, ok := criticalU2(n1, n2, 1-conf); ok {
		k = min(int(crit)+1, len(d)/2)
	}
	if k >= 1 {
		out.Lo = math.Expm1(d[k-1])
		out.Hi = math.Expm1(d[len(d)-k])
	}
	return out
}

// Median returns the median of xs (the mean of the two middle values for an even
// count); NaN for an empty sample.
func Median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return median(s)
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// RobustCV is a coefficient of variation that one outlier cannot inflate:
// 1.4826 * MAD / median (the MAD scaled to estimate the standard deviation of
// a normal sample; Rousseeuw & Croux 1993). NaN for fewer than 3 values or a
// zero median.
func RobustCV(xs []float64) float64 {
	if len(xs) < 3 {
		return math.NaN()
	}
	m := Median(xs)
	if m == 0 {
		return math.NaN()
	}
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - m)
	}
	return 1.4826 * Median(dev) / math.Abs(m)
}
