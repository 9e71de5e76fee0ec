package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	mstats "github.com/aclements/go-moremath/stats"
	"gonum.org/v1/gonum/stat/distuv"
)

func TestStudentsTQuantileTable(t *testing.T) {
	// Fieller's interval rests on gonum's Student t quantile: check it against a
	// published t table (two-sided 5% and 1% points, 4 decimals, e.g. Fisher &
	// Yates, Statistical Tables) and against go-moremath's independent t CDF.
	cases := []struct{ p, nu, q float64 }{
		{0.975, 1, 12.7062}, {0.975, 4, 2.7764}, {0.975, 9, 2.2622}, {0.975, 29, 2.0452},
		{0.995, 9, 3.2498}, {0.995, 4, 4.6041}, {0.95, 9, 1.8331},
	}
	for _, c := range cases {
		q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: c.nu}.Quantile(c.p)
		if math.Abs(q-c.q) > 5e-5 {
			t.Errorf("t quantile %v, %v df = %.5f, table %v", c.p, c.nu, q, c.q)
		}
		if got := (mstats.TDist{V: c.nu}).CDF(q); math.Abs(got-c.p) > 1e-10 {
			t.Errorf("go-moremath CDF(%v) with %v df = %.12f, want %v", q, c.nu, got, c.p)
		}
	}
}

func TestFiellerWorkedExample(t *testing.T) {
	// By hand: a = 5,4,6,5,5 and b = 9,10,10,11,10 have means 5 and 10, sample
	// variances 0.5 and 0.5 and covariance 0, so the variances of the means are
	// 0.1 and the covariance 0. With t = 2.7764 (4 df, 97.5%, t table) the set is
	// (100 - 0.1t^2) r^2 - 100 r + (25 - 0.1t^2) <= 0, whose roots (bc -l) are
	// 0.405267 and 0.602502. The tolerance covers the table's 4 decimals of t.
	a := []float64{5, 4, 6, 5, 5}
	b := []float64{9, 10, 10, 11, 10}
	est, lo, hi, ok := Fieller(a, b, 0.95)
	if !ok || est != 0.5 || math.Abs(lo-0.405267) > 5e-6 || math.Abs(hi-0.602502) > 5e-6 {
		t.Errorf("Fieller = %v [%v, %v] %v, want 0.5 [0.405267, 0.602502] true", est, lo, hi, ok)
	}
}

// tTestP is the two-sided p-value of the one-sample t-test of mean(a - r*b) = 0,
// by go-moremath (an implementation independent of Fieller's).
func tTestP(t *testing.T, a, b []float64, r float64) float64 {
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - r*b[i]
	}
	res, err := mstats.OneSampleTTest(mstats.Sample{Xs: d}, 0, mstats.LocationDiffers)
	if err != nil {
		t.Fatal(err)
	}
	return res.P
}

func TestFiellerInvertsTheTTest(t *testing.T) {
	// The interval is exactly the set of ratios r for which the t-test of
	// mean(A - r*B) = 0 is not rejected at 1-conf: just inside each end p > alpha,
	// just outside p < alpha, at the ends p = alpha.
	r := rand.New(rand.NewPCG(11, 12))
	bounded := 0
	for rep := 0; rep < 50; rep++ {
		n := 3 + rep%10
		conf := []float64{0.9, 0.95, 0.99}[rep%3]
		a, b := make([]float64, n), make([]float64, n)
		for i := range a {
			b[i] = 10 + 3*r.NormFloat64()
			a[i] = 4 + 2*r.NormFloat64()
			if rep%2 == 0 {
				a[i] += 0.5 * b[i] // correlated pairs
			}
		}
		est, lo, hi, ok := Fieller(a, b, conf)
		if !ok {
			continue
		}
		bounded++
		alpha := 1 - conf
		if !(lo <= est && est <= hi) {
			t.Errorf("rep %d: est %v outside [%v, %v]", rep, est, lo, hi)
		}
		eps := 1e-6 * (hi - lo)
		for _, c := range []struct {
			r      float64
			inside bool
		}{{lo + eps, true}, {hi - eps, true}, {lo - eps, false}, {hi + eps, false}, {est, true}} {
			p := tTestP(t, a, b, c.r)
			if (p > alpha) != c.inside {
				t.Errorf("rep %d n=%d conf %v: r=%v (interval [%v, %v]) p=%v, inside=%v", rep, n, conf, c.r, lo, hi, p, c.inside)
			}
		}
		for _, end := range []float64{lo, hi} {
			if p := tTestP(t, a, b, end); math.Abs(p-alpha) > 1e-8 {
				t.Errorf("rep %d: p at the end %v is %v, want %v", rep, end, p, alpha)
			}
		}
	}
	if bounded < 40 {
		t.Errorf("only %d of 50 intervals bounded: the test checks too little", bounded)
	}
}

func TestFiellerUnbounded(t *testing.T) {
	// Denominator not significantly non-zero: unbounded, whether the numerator is
	// (exclusive set) or is not (whole line).
	b := []float64{1, -1, 2, -2, 0.5}
	for _, a := range [][]float64{{10, 11, 9, 10, 10.5}, {1, -1, 0, 0.5, -0.5}} {
		_, lo, hi, ok := Fieller(a, b, 0.95)
		if ok || !math.IsInf(lo, -1) || !math.IsInf(hi, 1) {
			t.Errorf("a=%v: [%v, %v] %v, want unbounded", a, lo, hi, ok)
		}
	}
	if est, _, _, ok := Fieller([]float64{1}, []float64{2}, 0.95); ok || est != 0.5 {
		t.Errorf("one pair: est %v bounded %v", est, ok)
	}
	if est, _, _, ok := Fieller(nil, nil, 0.95); ok || !math.IsNaN(est) {
		t.Errorf("no pairs: est %v bounded %v", est, ok)
	}
	// Exactly proportional pairs: no noise in A - r*B at r = 2: the point 2.
	if est, lo, hi, ok := Fieller([]float64{20, 22, 24}, []float64{10, 11, 12}, 0.95); !ok || est != 2 || math.Abs(lo-2) > 1e-12 || math.Abs(hi-2) > 1e-12 {
		t.Errorf("proportional: %v [%v, %v] %v", est, lo, hi, ok)
	}
	defer func() {
		if recover() == nil {
			t.Error("lengths differ: want a panic")
		}
	}()
	Fieller([]float64{1, 2}, []float64{1}, 0.95)
}

func TestPositionCoverage(t *testing.T) {
	// Normal runs in blocks with a shared block effect (drift): the 95% interval
	// must cover the true position 0.25 in 95% +- 1.5% of 2000 replicates (the
	// binomial standard error is 0.49%).
	r := rand.New(rand.NewPCG(13, 14))
	const reps, n, truth = 2000, 8, 0.25
	covered := 0
	for rep := 0; rep < reps; rep++ {
		good, bad, cand := make([]float64, n), make([]float64, n), make([]float64, n)
		for i := 0; i < n; i++ {
			drift := 100 * r.NormFloat64()
			good[i] = 1000 + drift + 40*r.NormFloat64()
			bad[i] = 600 + drift + 40*r.NormFloat64()
			cand[i] = 700 + drift + 40*r.NormFloat64()
		}
		pe := Position(good, bad, cand, 0.95)
		if !pe.Bounded {
			t.Fatalf("rep %d: unbounded with good and bad 400 apart", rep)
		}
		if pe.Lo <= truth && truth <= pe.Hi {
			covered++
		}
	}
	if c := float64(covered) / reps; math.Abs(c-0.95) > 0.015 {
		t.Errorf("coverage %.4f, want 0.95 +- 0.015", c)
	}
}

func TestPosition(t *testing.T) {
	good := []float64{1000, 1010, 990, 1005, 995}
	bad := []float64{600, 590, 610, 605, 595}
	cand := []float64{980, 1000, 995, 990, 1000}
	pe := Position(good, bad, cand, 0.99)
	// Means: good 1000, bad 600, cand 993: position 393/400.
	if !pe.Bounded || math.Abs(pe.Est-393.0/400) > 1e-12 || pe.Conf != 0.99 || !(pe.Lo < pe.Est && pe.Est < pe.Hi) || pe.Lo < 0.5 {
		t.Errorf("candidate like good: %+v", pe)
	}
	// A block effect shared by the three runs of a block changes nothing.
	g2, b2, c2 := append([]float64(nil), good...), append([]float64(nil), bad...), append([]float64(nil), cand...)
	for i, s := range []float64{-300, 50, 200, -10, 120} {
		g2[i] += s
		b2[i] += s
		c2[i] += s
	}
	if p2 := Position(g2, b2, c2, 0.99); math.Abs(p2.Est-pe.Est) > 1e-12 || math.Abs(p2.Lo-pe.Lo) > 1e-9 || math.Abs(p2.Hi-pe.Hi) > 1e-9 {
		t.Errorf("block effects moved the position: %+v vs %+v", p2, pe)
	}
	// Good and bad not separated: unbounded. Bounded exactly when the paired
	// t-test of good vs bad (go-moremath) rejects at 1-conf.
	r := rand.New(rand.NewPCG(15, 16))
	unbounded := 0
	for rep := 0; rep < 300; rep++ {
		n := 3 + rep%8
		shift := []float64{0, 5, 20}[rep%3]
		g, b, c := make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range g {
			g[i] = 100 + shift + 10*r.NormFloat64()
			b[i] = 100 + 10*r.NormFloat64()
			c[i] = 100 + 10*r.NormFloat64()
		}
		pe := Position(g, b, c, 0.95)
		res, err := mstats.PairedTTest(g, b, 0, mstats.LocationDiffers)
		if err != nil {
			t.Fatal(err)
		}
		if pe.Bounded != (res.P < 0.05) {
			t.Errorf("rep %d: bounded %v but paired t-test p = %v", rep, pe.Bounded, res.P)
		}
		if shift == 0 && !pe.Bounded {
			unbounded++
		}
	}
	// With no shift the interval is bounded only in the 5% of cases where the
	// t-test errs: 100 such replicates, expect about 95 unbounded.
	if unbounded < 88 {
		t.Errorf("good = bad: only %d of 100 intervals unbounded", unbounded)
	}
}
