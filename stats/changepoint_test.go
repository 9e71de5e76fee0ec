package stats

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// cpSynth draws a series of points with runs runs each: run j of point i is
// 1000 * level(i) * exp(cv * N(0,1)) (log-normal noise, CV about cv).
func cpSynth(r *rand.Rand, points, runs int, cv float64, level func(i int) float64) [][]float64 {
	s := make([][]float64, points)
	for i := range s {
		s[i] = sample(r, runs, 1000*level(i), cv)
	}
	return s
}

func step(at int, rel float64) func(int) float64 {
	return func(i int) float64 {
		if i >= at {
			return 1 + rel
		}
		return 1
	}
}

func indexes(cps []ChangePoint) []int {
	var out []int
	for _, c := range cps {
		out = append(out, c.Index)
	}
	return out
}

// cpTrials is the number of seeded series per scenario: 1000 (about 0.3 s per
// scenario), 100 with -short.
func cpTrials() int {
	if testing.Short() {
		return 100
	}
	return 1000
}

// cpRate runs ChangePoints on cpTrials() seeded series and returns the
// fraction whose change points satisfy ok.
func cpRate(t *testing.T, seed uint64, points, runs int, cv float64, level func(int) float64,
	opt ChangePointOptions, ok func([]ChangePoint) bool) float64 {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	n, trials := 0, cpTrials()
	for k := 0; k < trials; k++ {
		cps, err := ChangePoints(cpSynth(r, points, runs, cv, level), opt)
		if err != nil {
			t.Fatal(err)
		}
		if ok(cps) {
			n++
		} else if testing.Verbose() {
			t.Logf("series %d: %v", k, indexes(cps))
		}
	}
	return float64(n) / float64(trials)
}

func TestChangePointsSingleStep(t *testing.T) {
	// -10% at point 15 of 30, CV 2%, 5 runs per point.
	got := cpRate(t, 1, 30, 5, 0.02, step(15, -0.10), ChangePointOptions{},
		func(cps []ChangePoint) bool { return len(cps) == 1 && cps[0].Index == 15 })
	t.Logf("single -10%% step: found exactly at 15, and nothing else, in %.1f%% of series", 100*got)
	if got < 0.95 {
		t.Errorf("single step found exactly in %.1f%% of series, want >= 95%%", 100*got)
	}
	// The numbers of one such change point.
	r := rand.New(rand.NewPCG(2, 7))
	cps, err := ChangePoints(cpSynth(r, 30, 5, 0.02, step(15, -0.10)), ChangePointOptions{})
	if err != nil || len(cps) != 1 {
		t.Fatalf("%v %v", cps, err)
	}
	c := cps[0]
	if c.Index != 15 || c.PointsBefore != 15 || c.PointsAfter != 15 || c.RunsBefore != 75 || c.RunsAfter != 75 {
		t.Errorf("segments: %+v", c)
	}
	if math.Abs(c.MedianBefore-1000) > 15 || math.Abs(c.MedianAfter-900) > 15 || math.Abs(c.RelChange+0.10) > 0.015 ||
		math.Abs(c.LocalChange+0.10) > 0.03 || !(c.P < 0.001) || !strings.Contains(c.Rule, "p=") {
		t.Errorf("numbers: %+v", c)
	}
	// Direction is reported, not assumed: the mirrored step is +10%.
	r = rand.New(rand.NewPCG(2, 7))
	cps, _ = ChangePoints(cpSynth(r, 30, 5, 0.02, step(15, +0.10)), ChangePointOptions{})
	if len(cps) != 1 || cps[0].Index != 15 || !(cps[0].RelChange > 0.08) {
		t.Errorf("upward step: %+v", cps)
	}
}

func TestChangePointsPower(t *testing.T) {
	// Smaller steps and noisier runs: found exactly at 15 (and nothing else).
	exact := func(cps []ChangePoint) bool { return len(cps) == 1 && cps[0].Index == 15 }
	cases := []struct {
		rel, cv, want float64
	}{
		{-0.05, 0.02, 0.95},
		{-0.03, 0.02, 0.70},
		{-0.10, 0.07, 0.80},
	}
	for i, c := range cases {
		got := cpRate(t, 20+uint64(i), 30, 5, c.cv, step(15, c.rel), ChangePointOptions{}, exact)
		t.Logf("step %+.0f%%, CV %.0f%%, 5 runs: found exactly in %.1f%% of series", 100*c.rel, 100*c.cv, 100*got)
		if got < c.want {
			t.Errorf("step %+.0f%%, CV %.0f%%: found exactly in %.1f%%, want >= %.0f%%", 100*c.rel, 100*c.cv, 100*got, 100*c.want)
		}
	}
	// Points with different numbers of runs (1 to 7).
	r := rand.New(rand.NewPCG(30, 7))
	found, trials := 0, cpTrials()
	for k := 0; k < trials; k++ {
		s := make([][]float64, 30)
		for i := range s {
			s[i] = sample(r, 1+r.IntN(7), 1000*step(15, -0.10)(i), 0.02)
		}
		if cps, err := ChangePoints(s, ChangePointOptions{}); err == nil && exact(cps) {
			found++
		}
	}
	t.Logf("step -10%%, CV 2%%, 1 to 7 runs per point: found exactly in %.1f%% of series", 100*float64(found)/float64(trials))
	if float64(found) < 0.95*float64(trials) {
		t.Errorf("1 to 7 runs per point: found exactly in %d/%d series", found, trials)
	}
}

func TestChangePointsTwoSteps(t *testing.T) {
	level := func(i int) float64 {
		f := 1.0
		if i >= 10 {
			f *= 0.92
		}
		if i >= 22 {
			f *= 1.06
		}
		return f
	}
	got := cpRate(t, 3, 30, 5, 0.02, level, ChangePointOptions{}, func(cps []ChangePoint) bool {
		return len(cps) == 2 && cps[0].Index == 10 && cps[1].Index == 22 && cps[0].RelChange < 0 && cps[1].RelChange > 0
	})
	t.Logf("two steps (-8%% at 10, +6%% at 22): both found exactly, nothing else, in %.1f%% of series", 100*got)
	if got < 0.90 {
		t.Errorf("two steps found exactly in %.1f%% of series, want >= 90%%", 100*got)
	}
}

func TestChangePointsNoChange(t *testing.T) {
	none := func(cps []ChangePoint) bool { return len(cps) == 0 }
	got := cpRate(t, 4, 30, 5, 0.02, step(0, 0), ChangePointOptions{}, none)
	t.Logf("no change, defaults: false change points in %.1f%% of series", 100*(1-got))
	if got < 0.99 {
		t.Errorf("false change points in %.1f%% of series, want <= 1%%", 100*(1-got))
	}
	// Without the magnitude guard the p-value control alone must hold: the
	// Bonferroni factor covers the choice of the position.
	got = cpRate(t, 5, 30, 5, 0.02, step(0, 0), ChangePointOptions{MinMagnitude: 1e-12}, none)
	t.Logf("no change, MinMagnitude off: false change points in %.1f%% of series", 100*(1-got))
	if got < 0.99 {
		t.Errorf("MinMagnitude off: false change points in %.1f%% of series, want <= 1%%", 100*(1-got))
	}
	// Heavy-tailed runs: one run in ten is 30% low (a noisy neighbour).
	r := rand.New(rand.NewPCG(6, 7))
	fp, trials := 0, cpTrials()
	for k := 0; k < trials; k++ {
		s := cpSynth(r, 30, 5, 0.02, step(0, 0))
		for _, runs := range s {
			for j := range runs {
				if r.IntN(10) == 0 {
					runs[j] *= 0.7
				}
			}
		}
		if cps, _ := ChangePoints(s, ChangePointOptions{}); len(cps) > 0 {
			fp++
		}
	}
	t.Logf("no change, 10%% outlier runs: false change points in %.1f%% of series", 100*float64(fp)/float64(trials))
	if float64(fp) > 0.01*float64(trials) {
		t.Errorf("outlier runs: false change points in %d/%d series", fp, trials)
	}
}

func TestChangePointsSpike(t *testing.T) {
	// One point (all its runs) 30% low, in the middle, at an end or next to
	// one (the worst places: a 3-point end segment holds it).
	for _, at := range []int{14, 0, 1, 28, 29} {
		spike := func(i int) float64 {
			if i == at {
				return 0.7
			}
			return 1
		}
		got := cpRate(t, 7, 30, 5, 0.02, spike, ChangePointOptions{},
			func(cps []ChangePoint) bool { return len(cps) == 0 })
		t.Logf("one point 30%% low at %d: false change points in %.1f%% of series", at, 100*(1-got))
		if got < 0.99 {
			t.Errorf("spike at %d reported in %.1f%% of series, want <= 1%%", at, 100*(1-got))
		}
	}
}

func TestChangePointsBelowMagnitude(t *testing.T) {
	// -1% with CV 0.5% and 10 runs per point: highly significant, but below
	// the default 2%; it is reported once MinMagnitude is 0.5%.
	r := rand.New(rand.NewPCG(8, 7))
	s := cpSynth(r, 30, 10, 0.005, step(15, -0.01))
	if cps, err := ChangePoints(s, ChangePointOptions{}); err != nil || len(cps) != 0 {
		t.Errorf("-1%% step with MinMagnitude 2%%: %+v %v", cps, err)
	}
	cps, err := ChangePoints(s, ChangePointOptions{MinMagnitude: 0.005})
	if err != nil || len(cps) != 1 || cps[0].Index != 15 || !(cps[0].P < 1e-6) {
		t.Errorf("-1%% step with MinMagnitude 0.5%%: %+v %v", cps, err)
	}
}

func TestChangePointsDrift(t *testing.T) {
	// A linear drift of -10% over 30 points is no step: the segments differ
	// but a straight line fits them better than a step, and neighbouring
	// points differ by MinSegment*0.34% only, so nothing is reported in most
	// series. When something is, it is two or more change points of a few
	// percent each (short segments, where the line test has little power).
	drift := func(i int) float64 { return 1 - 0.10*float64(i)/29 }
	var hist [4]int
	r := rand.New(rand.NewPCG(9, 7))
	trials := cpTrials()
	for k := 0; k < trials; k++ {
		cps, err := ChangePoints(cpSynth(r, 30, 5, 0.02, drift), ChangePointOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hist[min(len(cps), 3)]++
	}
	t.Logf("drift -10%%: 0/1/2/3+ change points in %v of %d series", hist, trials)
	if float64(hist[0]) < 0.95*float64(trials) {
		t.Errorf("drift: 0/1/2/3+ change points in %v of %d series, want >= 95%% with none", hist, trials)
	}
}

func TestChangePointsErrors(t *testing.T) {
	ok := [][]float64{{1, 2}, {1}, {3}}
	cases := []struct {
		series [][]float64
		opt    ChangePointOptions
		want   string
	}{
		{nil, ChangePointOptions{}, "empty series"},
		{[][]float64{{1}, {}}, ChangePointOptions{}, "point 1 has no runs"},
		{[][]float64{{1}, {2, -1}}, ChangePointOptions{}, "point 1 run 1"},
		{[][]float64{{1}, {2, math.NaN()}}, ChangePointOptions{}, "point 1 run 1"},
		{[][]float64{{math.Inf(1)}}, ChangePointOptions{}, "point 0 run 0"},
		{ok, ChangePointOptions{MaxP: 1}, "MaxP"},
		{ok, ChangePointOptions{MaxP: -0.1}, "MaxP"},
		{ok, ChangePointOptions{MinMagnitude: -0.1}, "MinMagnitude"},
		{ok, ChangePointOptions{MinMagnitude: math.NaN()}, "MinMagnitude"},
		{ok, ChangePointOptions{MinSegment: -1}, "MinSegment"},
	}
	for _, c := range cases {
		_, err := ChangePoints(c.series, c.opt)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ChangePoints(%v, %+v) error %v, want one containing %q", c.series, c.opt, err, c.want)
		}
	}
	// Too short for two segments: no change points, no error.
	if cps, err := ChangePoints([][]float64{{1}, {1}, {9}, {9}, {9}}, ChangePointOptions{}); err != nil || len(cps) != 0 {
		t.Errorf("5 points with MinSegment 3: %v %v", cps, err)
	}
	// MinSegment 1 and a clean step of single runs: found at index 2.
	// 4 vs 12 runs completely separated: p = 2/C(16,4) * 15 positions = 0.016.
	cps, err := ChangePoints([][]float64{{10}, {10.1}, {9.9}, {10.2}, {20}, {20.1}, {19.9}, {20}, {20.2}, {19.8}, {20}, {20.1}, {19.9}, {20}, {20.3}, {19.7}},
		ChangePointOptions{MinSegment: 1, MaxP: 0.05})
	if err != nil || len(cps) != 1 || cps[0].Index != 4 || math.Abs(cps[0].RelChange-(20.0/10.05-1)) > 1e-9 ||
		math.Abs(cps[0].LocalChange-(20.0/10.2-1)) > 1e-9 || math.Abs(cps[0].P-2.0/1820*15) > 1e-9 {
		t.Errorf("MinSegment 1: %+v %v", cps, err)
	}
}
