package stats

import "math"

// OutlierFence is how far from its own side's median, in noise units
// (LogNoise of both sides), a run must lie to be left out of an equivalence
// interval: far enough that log-normal or normal noise puts a run there about
// once in a million, near enough to catch a hiccup run (a flush, a neighbour)
// of 20% or more at 3% noise.
const OutlierFence = 5.0

// minOutlierRuns is the fewest runs a side must have before one of them is
// called an outlier: with fewer, a median and a noise estimate do not say
// what the side's level is.
const minOutlierRuns = 8

// Outliers splits xs into the runs kept and those left out: the runs whose
// log lies more than OutlierFence noise units (noise: a log-scale spread,
// LogNoise) from the median of xs's logs, when they are at most one run of
// 8 to 19, or one in ten of 20 or more. More such runs are the side's spread, not
// hiccups: then spread is true and every run is kept. Nothing is left out of
// fewer than 8 runs or when noise is not positive. Both results are in xs's
// order; the values must be positive.
func Outliers(xs []float64, noise float64) (kept, out []float64, spread bool) {
	if len(xs) < minOutlierRuns || !(noise > 0) {
		return xs, nil, false
	}
	l := make([]float64, len(xs))
	for i, v := range xs {
		l[i] = math.Log(v)
	}
	m := Median(l)
	far := make([]bool, len(xs))
	nFar := 0
	for i, v := range l {
		if math.Abs(v-m) > OutlierFence*noise {
			far[i] = true
			nFar++
		}
	}
	if nFar == 0 {
		return xs, nil, false
	}
	if nFar > max(1, len(xs)/10) {
		return xs, nil, true
	}
	for i, v := range xs {
		if far[i] {
			out = append(out, v)
		} else {
			kept = append(kept, v)
		}
	}
	return kept, out, false
}
