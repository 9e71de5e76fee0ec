package stats

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Defaults of ChangePointOptions, used where a field is zero.
const (
	// DefaultChangePointMaxP is Apache Otava's default max_pvalue.
	DefaultChangePointMaxP = 0.001
	// DefaultChangePointMinMagnitude is the smallest relative change reported
	// (2%, the size of the MDEV-10409 regression).
	DefaultChangePointMinMagnitude = 0.02
	// DefaultChangePointMinSegment is the fewest points between two change
	// points (and before the first and after the last): with 3, one outlier
	// point cannot carry a segment's pooled median.
	DefaultChangePointMinSegment = 3
)

// ChangePointOptions tunes ChangePoints. A zero field takes its default.
type ChangePointOptions struct {
	// MaxP is the significance every reported change point must reach: its
	// Bonferroni-adjusted Mann-Whitney p-value is < MaxP. In (0, 1); default
	// DefaultChangePointMaxP. The split phase uses the relaxed level
	// 10*MaxP (2*MaxP from 0.05, MaxP from 0.5), as Otava does.
	MaxP float64
	// MinMagnitude is the smallest relative change reported (0.02 = 2%),
	// compared with the smaller of |RelChange| and |LocalChange| (0 for what
	// is not a step, see ChangePoints). It is what
	// keeps many runs per point from making tiny shifts "significant". >= 0;
	// zero means DefaultChangePointMinMagnitude, so pass a tiny positive value
	// (1e-12) to switch the guard off.
	MinMagnitude float64
	// MinSegment is the fewest points (commits) a segment may have, >= 1;
	// default DefaultChangePointMinSegment. It is also the width, in points,
	// of the windows LocalChange compares. A change closer than MinSegment
	// points to an end of the series, or to another change, is not found.
	MinSegment int
}

// ChangePoint is a place where the series shifted: between point Index-1 and
// point Index (Index is the first point after the change; MinSegment <=
// Index <= len(series)-MinSegment). The position is an estimate: with noisy
// runs it can be off by a point or two, so a caller confirms the endpoints it
// derives (Compare) before bisecting between them.
// The segments are the stretches between the neighbouring change points (or
// the ends of the series) on either side.
type ChangePoint struct {
	Index                     int
	PointsBefore, PointsAfter int     // points (commits) in the segments before and after
	RunsBefore, RunsAfter     int     // runs in those segments
	MedianBefore, MedianAfter float64 // medians of the pooled runs of the two segments, in the metric's unit
	// RelChange is (MedianAfter-MedianBefore)/MedianBefore: negative when the
	// metric went down. Whether that is a regression depends on the metric
	// (tps down is worse, latency down is better); ChangePoints does not assume.
	RelChange float64
	// LocalChange is the same ratio for the pooled runs of only the MinSegment
	// points just before and just after Index: a step has LocalChange close to
	// RelChange, a gradual drift has a much smaller one.
	LocalChange float64
	// P is the two-sided Mann-Whitney U p-value between the runs of the two
	// segments, multiplied by the number of positions the change could have
	// taken between them (Bonferroni), at most 1.
	P    float64
	Rule string // why it was reported, in words and numbers
}

// ChangePoints finds where a series of measurements shifted. series[i] holds
// the runs (one value per run, e.g. tps; at least one, all positive and
// finite) of the i-th measured commit, in commit order. The result is ordered
// by Index; it is empty when nothing changed or the series is shorter than
// 2*MinSegment points. Errors name the bad option field, or the point and run
// index of a bad value, or report an empty series or point.
//
// The method is Apache Otava's split and merge over E-divisive candidates
// (Fleming et al., ICPE 2023), with p from the Mann-Whitney U test between
// the pooled runs of adjacent segments (Bonferroni over the positions a
// change point could take), and a change point must be a step: a gradual
// drift gives none. docs/statistics.md ("Change points") says how and why
// it differs from Otava.
func ChangePoints(series [][]float64, opt ChangePointOptions) ([]ChangePoint, error) {
	if opt.MaxP == 0 {
		opt.MaxP = DefaultChangePointMaxP
	}
	if opt.MinMagnitude == 0 {
		opt.MinMagnitude = DefaultChangePointMinMagnitude
	}
	if opt.MinSegment == 0 {
		opt.MinSegment = DefaultChangePointMinSegment
	}
	switch {
	case !(opt.MaxP > 0 && opt.MaxP < 1):
		return nil, fmt.Errorf("stats: ChangePointOptions.MaxP = %v, want 0 < MaxP < 1", opt.MaxP)
	case !(opt.MinMagnitude > 0) || math.IsInf(opt.MinMagnitude, 1):
		return nil, fmt.Errorf("stats: ChangePointOptions.MinMagnitude = %v, want a finite value >= 0", opt.MinMagnitude)
	case opt.MinSegment < 0:
		return nil, fmt.Errorf("stats: ChangePointOptions.MinSegment = %d, want >= 1 (0 for the default)", opt.MinSegment)
	}
	if len(series) == 0 {
		return nil, errors.New("stats: ChangePoints: empty series")
	}
	for i, runs := range series {
		if len(runs) == 0 {
			return nil, fmt.Errorf("stats: ChangePoints: point %d has no runs", i)
		}
		for j, v := range runs {
			if !(v > 0) || math.IsInf(v, 1) {
				return nil, fmt.Errorf("stats: ChangePoints: point %d run %d is %v, want a positive finite value", i, j, v)
			}
		}
	}
	s := newCPSeries(series, opt.MinSegment)
	if s.n < 2*s.minSeg {
		return nil, nil
	}
	splitP := opt.MaxP
	switch {
	case opt.MaxP < 0.05:
		splitP = 10 * opt.MaxP
	case opt.MaxP < 0.5:
		splitP = 2 * opt.MaxP
	}
	var idx []int
	s.split(0, s.n, splitP, &idx)
	sort.Ints(idx)
	return s.merge(idx, opt), nil
}

// cpSeries holds a series with the sums that make the energy statistic of
// any split O(1).
type cpSeries struct {
	runs   [][]float64
	n      int
	minSeg int
	cnt    []int       // cnt[i] = runs in points [0, i)
	med    []float64   // median of each point's runs
	dist   [][]float64 // dist[i][j] = sum of |x-y| over runs x of points [0,i), y of [0,j)
}

func newCPSeries(series [][]float64, minSeg int) *cpSeries {
	n := len(series)
	s := &cpSeries{runs: series, n: n, minSeg: minSeg, cnt: make([]int, n+1), dist: make([][]float64, n+1)}
	for i := range s.dist {
		s.dist[i] = make([]float64, n+1)
	}
	s.med = make([]float64, n)
	for i, r := range series {
		s.cnt[i+1] = s.cnt[i] + len(r)
		s.med[i] = Median(r)
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			d := 0.0
			for _, x := range series[i] {
				for _, y := range series[j] {
					d += math.Abs(x - y)
				}
			}
			s.dist[i+1][j+1] = d + s.dist[i][j+1] + s.dist[i+1][j] - s.dist[i][j]
		}
	}
	return s
}

// block is the sum of |x-y| over runs x of points [a0,a1) and y of [b0,b1).
func (s *cpSeries) block(a0, a1, b0, b1 int) float64 {
	return s.dist[a1][b1] - s.dist[a0][b1] - s.dist[a1][b0] + s.dist[a0][b0]
}

// qhat is the energy statistic of Matteson & James (exponent 1) between the
// runs of points [a,t) and [t,k): nx*ny/(nx+ny) times the energy distance
// 2*mean|X-Y| - mean|X-X'| - mean|Y-Y'| (pairs within a sample distinct).
func (s *cpSeries) qhat(a, t, k int) float64 {
	nx, ny := float64(s.cnt[t]-s.cnt[a]), float64(s.cnt[k]-s.cnt[t])
	e := 2 * s.block(a, t, t, k) / (nx * ny)
	if nx > 1 {
		e -= s.block(a, t, a, t) / (nx * (nx - 1)) // ordered pairs: both halves of the symmetric block
	}
	if ny > 1 {
		e -= s.block(t, k, t, k) / (ny * (ny - 1))
	}
	return nx * ny / (nx + ny) * e
}

// candidate is the split of [a,b) with the largest energy statistic over
// t and the end k of the right-hand part, each part at least minSeg points.
func (s *cpSeries) candidate(a, b int) int {
	best, bestT := math.Inf(-1), -1
	for t := a + s.minSeg; t+s.minSeg <= b; t++ {
		for k := t + s.minSeg; k <= b; k++ {
			if q := s.qhat(a, t, k); q > best {
				best, bestT = q, t
			}
		}
	}
	return bestT
}

func (s *cpSeries) pool(a, b int) []float64 {
	out := make([]float64, 0, s.cnt[b]-s.cnt[a])
	for _, r := range s.runs[a:b] {
		out = append(out, r...)
	}
	return out
}

// positions is the number of places a change point between a and b could
// take with both parts at least minSeg points long.
func (s *cpSeries) positions(a, b int) int {
	return max(1, b-a-2*s.minSeg+1)
}

// pAt is the Bonferroni-adjusted Mann-Whitney p of a change at t between
// segments [a,t) and [t,b).
func (s *cpSeries) pAt(a, t, b int) float64 {
	p, err := MannWhitney(s.pool(a, t), s.pool(t, b))
	if err != nil {
		return 1
	}
	return math.Min(1, p*float64(s.positions(a, b)))
}

func (s *cpSeries) split(a, b int, level float64, out *[]int) {
	if b-a < 2*s.minSeg {
		return
	}
	t := s.candidate(a, b)
	if s.pAt(a, t, b) > level {
		return
	}
	*out = append(*out, t)
	s.split(a, t, level, out)
	s.split(t, b, level, out)
}

// evaluate fills a change point at t between segments [a,t) and [t,b) and
// returns its magnitude: the smaller of |RelChange| and |LocalChange|, 0 when
// they disagree in sign or when a straight line fits the two segments better
// than a step (stepFits).
func (s *cpSeries) evaluate(a, t, b int) (ChangePoint, float64) {
	before, after := s.pool(a, t), s.pool(t, b)
	c := ChangePoint{Index: t, PointsBefore: t - a, PointsAfter: b - t,
		RunsBefore: len(before), RunsAfter: len(after),
		MedianBefore: Median(before), MedianAfter: Median(after), P: s.pAt(a, t, b)}
	c.RelChange = c.MedianAfter/c.MedianBefore - 1
	c.LocalChange = Median(s.pool(t, t+s.minSeg))/Median(s.pool(t-s.minSeg, t)) - 1
	if c.RelChange*c.LocalChange <= 0 || !s.stepFits(a, t, b) {
		return c, 0
	}
	return c, math.Min(math.Abs(c.RelChange), math.Abs(c.LocalChange))
}

// stepFits reports whether two flat segments [a,t) and [t,b) describe the
// point medians better (smaller residual sum of squares) than one straight
// least-squares line over [a,b) does.
func (s *cpSeries) stepFits(a, t, b int) bool {
	rss := func(xs []float64) float64 {
		m := mean(xs)
		r := 0.0
		for _, x := range xs {
			r += (x - m) * (x - m)
		}
		return r
	}
	ys := s.med[a:b]
	step := rss(s.med[a:t]) + rss(s.med[t:b])
	n := float64(len(ys))
	xm, ym := (n-1)/2, mean(ys)
	sxy, sxx := 0.0, 0.0
	for i, y := range ys {
		sxy += (float64(i) - xm) * (y - ym)
		sxx += (float64(i) - xm) * (float64(i) - xm)
	}
	line := rss(ys) - sxy*sxy/sxx
	return step < line
}

func mean(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m += x
	}
	return m / float64(len(xs))
}

// merge removes the weakest change point until every one left has p < MaxP
// and a magnitude of at least MinMagnitude (Otava's merge step): first the
// largest p while some p >= MaxP, then the smallest magnitude. Removing one
// lengthens its neighbours' segments, so all are evaluated again.
func (s *cpSeries) merge(idx []int, opt ChangePointOptions) []ChangePoint {
	for len(idx) > 0 {
		cps := make([]ChangePoint, len(idx))
		mag := make([]float64, len(idx))
		for i, t := range idx {
			a, b := 0, s.n
			if i > 0 {
				a = idx[i-1]
			}
			if i+1 < len(idx) {
				b = idx[i+1]
			}
			cps[i], mag[i] = s.evaluate(a, t, b)
		}
		weakest := 0
		for i, c := range cps {
			if c.P > cps[weakest].P {
				weakest = i
			}
		}
		if cps[weakest].P < opt.MaxP {
			weakest = 0
			for i, m := range mag {
				if m < mag[weakest] {
					weakest = i
				}
			}
			if mag[weakest] >= opt.MinMagnitude {
				for i := range cps {
					c := &cps[i]
					c.Rule = fmt.Sprintf("p=%.2g < %.2g (Mann-Whitney, %d vs %d runs, x%d positions), change %+.1f%% and local %+.1f%% both at least %.1f%% in size, a step fits better than a line",
						c.P, opt.MaxP, c.RunsBefore, c.RunsAfter, s.positions(c.Index-c.PointsBefore, c.Index+c.PointsAfter),
						100*c.RelChange, 100*c.LocalChange, 100*opt.MinMagnitude)
				}
				return cps
			}
		}
		idx = append(idx[:weakest], idx[weakest+1:]...)
	}
	return nil
}
