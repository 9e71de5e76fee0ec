// Package scan measures a series of commits along a history (every Nth
// commit of the first-parent line, or its merges) and finds where the series
// shifted with change-point detection (stats.ChangePoints), so that each
// shift becomes a pair of endpoints for a bisection: perfbisect scan.
package scan

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/stats"
)

// FirstParentLine returns the first-parent chain from from (exclusive of
// nothing: from is the first element) to to, oldest first, from the commits
// of bisect.Range(from, to) (to's ancestors that descend from from). It is an
// error (wrapping bisect.ErrUsage) when from is not on to's first-parent line.
func FirstParentLine(commits []bisect.Commit, from, to string) ([]bisect.Commit, error) {
	g := bisect.NewGraph(commits)
	hashes := g.FirstParentLine(to, nil) // newest first, up to the range's end
	if len(hashes) == 0 || len(g[hashes[len(hashes)-1]].Parents) == 0 || g[hashes[len(hashes)-1]].Parents[0] != from {
		return nil, bisect.Usagef("%.10s is not on the first-parent line of %.10s (scan follows first parents; give an older start on that line)", from, to)
	}
	line := []bisect.Commit{{Hash: from}}
	for i := len(hashes) - 1; i >= 0; i-- {
		line = append(line, g[hashes[i]])
	}
	return line, nil
}

// Pick chooses the commits to measure from a first-parent line (oldest
// first): with merges, the merge commits of the line; otherwise every
// every-th commit; the first and the last are always included.
func Pick(line []bisect.Commit, every int, merges bool) []bisect.Commit {
	if every < 1 {
		every = 1
	}
	var out []bisect.Commit
	for i, c := range line {
		last := i == len(line)-1
		switch {
		case i == 0 || last:
		case merges && len(c.Parents) > 1:
		case !merges && i%every == 0:
		default:
			continue
		}
		out = append(out, c)
	}
	return out
}

// Point is one measured commit of the series.
type Point struct {
	Commit string
	Values []float64 // the metric of each run, in the metric's unit
	Skip   string    // why the commit could not be measured ("" when it was)
}

// Change is a shift of the series: the pair to bisect.
type Change struct {
	Good, Bad  string  // the last commit before and the first after the shift (endpoints for perfbisect start)
	Before     float64 // median of the metric over the segment before (metric's unit)
	After      float64 // and after
	RelChange  float64 // (After-Before)/Before, in the metric's direction as measured
	Regression bool    // the shift is in the metric's worse direction
	P          float64
	Rule       string
}

// Result is a scan's outcome.
type Result struct {
	Points  []Point
	Changes []Change
}

// Scan measures runs runs of every commit of points (oldest first) with m:
// in passes of one run per commit, alternately oldest-first and newest-first,
// so that a machine drifting during the scan moves every commit alike rather
// than tilting the series; a commit that cannot be built or measured is left
// out of the series (Point.Skip). Then it finds the shifts of the metric's
// series with stats.ChangePoints (opt) and returns them as (good, bad) pairs
// of measured neighbours. Errors are the tool's or the machine's.
func Scan(ctx context.Context, m bisect.Measurer, points []string, runs int, metric session.Metric, opt stats.ChangePointOptions) (*Result, error) {
	if len(points) < 2 {
		return nil, bisect.Usagef("a scan needs at least 2 commits to measure (got %d)", len(points))
	}
	if runs < 1 {
		return nil, bisect.Usagef("{runs} %d: want at least 1 run per commit", runs)
	}
	res := &Result{}
	for _, h := range points {
		res.Points = append(res.Points, Point{Commit: h})
	}
	untestable := func(p *Point, err error) bool {
		var u *bisect.UntestableError
		if !errors.As(err, &u) {
			return false
		}
		p.Skip = u.Reason
		if u.Err != nil {
			p.Skip += ": " + u.Err.Error()
		}
		return true
	}
	if pr, ok := m.(bisect.Preparer); ok {
		for i := range res.Points {
			p := &res.Points[i]
			if err := pr.Prepare(ctx, p.Commit); err != nil && !untestable(p, err) {
				return res, err
			}
		}
	}
	for pass := 0; pass < runs; pass++ {
		for k := range res.Points {
			i := k
			if pass%2 == 1 {
				i = len(res.Points) - 1 - k
			}
			p := &res.Points[i]
			if p.Skip != "" {
				continue
			}
			rs, err := m.Measure(ctx, p.Commit, 1)
			if err != nil {
				if untestable(p, err) {
					continue
				}
				return res, err
			}
			v := metric.Value(rs[0])
			if !(v > 0) || math.IsInf(v, 0) {
				p.Skip = fmt.Sprintf("no transactions (%s = %v)", metric, v)
				continue
			}
			p.Values = append(p.Values, v)
		}
	}
	var series [][]float64
	var index []int // series position -> Points index
	for i, p := range res.Points {
		if p.Skip == "" && len(p.Values) > 0 {
			series = append(series, p.Values)
			index = append(index, i)
		}
	}
	if len(series) < 2 {
		return res, nil
	}
	cps, err := stats.ChangePoints(series, opt)
	if err != nil {
		return res, err
	}
	for _, cp := range cps {
		c := Change{Good: res.Points[index[cp.Index-1]].Commit, Bad: res.Points[index[cp.Index]].Commit,
			Before: cp.MedianBefore, After: cp.MedianAfter, RelChange: cp.RelChange, P: cp.P, Rule: cp.Rule}
		c.Regression = (cp.RelChange < 0) == metric.HigherIsBetter()
		res.Changes = append(res.Changes, c)
	}
	return res, nil
}
