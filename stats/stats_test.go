package stats

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestMannWhitneyPublishedValues(t *testing.T) {
	cases := []struct {
		x, y []float64
		p    float64
	}{
		// Complete separation, 3 vs 3: exact two-sided p = 2/C(6,3) = 0.1 (R: wilcox.test).
		{[]float64{1, 2, 3}, []float64{4, 5, 6}, 0.1},
		// 5 vs 5: 2/252.
		{[]float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 2.0 / 252},
		// R's ?wilcox.test example (Hollander & Wolfe p. 110): two-sided exact p = 0.2544.
		{[]float64{0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46}, []float64{1.15, 0.88, 0.90, 0.74, 1.21}, 0.2544},
	}
	for _, c := range cases {
		p, err := MannWhitney(c.x, c.y)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(p-c.p) > 5e-4 {
			t.Errorf("MannWhitney(%v, %v) = %.4f, want %.4f", c.x, c.y, p, c.p)
		}
	}
	if p, _ := MannWhitney([]float64{3, 3}, []float64{3, 3}); p != 1 {
		t.Errorf("all equal: p = %v, want 1", p)
	}
	if _, err := MannWhitney(nil, []float64{1}); err == nil {
		t.Error("empty sample: want error")
	}
}

func TestMinPAndRunsNeeded(t *testing.T) {
	if got := MinP(5, 5); math.Abs(got-2.0/252) > 1e-12 {
		t.Errorf("MinP(5,5) = %v", got)
	}
	// benchstat's rule of thumb: 4 per side for p < 0.05, 5 for p <= 0.01.
	if RunsNeeded(0.05) != 4 || RunsNeeded(0.01) != 5 {
		t.Errorf("RunsNeeded: %d for 0.05, %d for 0.01", RunsNeeded(0.05), RunsNeeded(0.01))
	}
}

func TestShiftMosesInterval(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x, y := make([]float64, 10), make([]float64, 10)
	for i := range x {
		x[i] = 100 * math.Exp(r.NormFloat64()*0.05)
		y[i] = 90 * math.Exp(r.NormFloat64()*0.05)
	}
	s := Shift(x, y, 0.95)
	var d []float64
	for _, a := range x {
		for _, b := range y {
			d = append(d, math.Log(b/a))
		}
	}
	sort.Float64s(d)
	// For n=m=10 the two-sided 5% critical value of U is 23 (tables in Hollander
	// & Wolfe), so the interval is [d(24), d(77)].
	if math.Abs(s.Lo-math.Expm1(d[23])) > 1e-12 || math.Abs(s.Hi-math.Expm1(d[76])) > 1e-12 {
		t.Errorf("interval [%v, %v], want [%v, %v]", s.Lo, s.Hi, math.Expm1(d[23]), math.Expm1(d[76]))
	}
	if math.Abs(s.Est-math.Expm1((d[49]+d[50])/2)) > 1e-12 {
		t.Errorf("estimate %v", s.Est)
	}
	if !(s.Lo < -0.10+0.05 && s.Hi > -0.10-0.05 && s.Lo < s.Est && s.Est < s.Hi) {
		t.Errorf("true shift -10%% not near [%v %v %v]", s.Lo, s.Est, s.Hi)
	}
	// Exact scaling: y = 1.2 x gives exactly +20%.
	for i := range y {
		y[i] = 1.2 * x[i]
	}
	if e := Shift(x, y, 0.9).Est; math.Abs(e-0.2) > 1e-9 {
		t.Errorf("scaled sample: shift %v, want 0.2", e)
	}
	// Too few runs for the level: unbounded.
	if s := Shift([]float64{1, 2}, []float64{3, 4}, 0.99); s.Bounded() {
		t.Errorf("2 vs 2 at 99%%: interval should be unbounded, got %+v", s)
	}
}

func sample(r *rand.Rand, n int, median, cv float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = median * math.Exp(r.NormFloat64()*cv)
	}
	return out
}

func TestCompareVerdicts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		name      string
		old, new  []float64
		threshold float64
		want      Verdict
	}{
		{"large drop", sample(r, 8, 1000, 0.03), sample(r, 8, 600, 0.03), 0.05, Different},
		{"no change, many quiet runs", sample(r, 30, 1000, 0.005), sample(r, 30, 1000, 0.005), 0.05, Same},
		{"no change, few noisy runs", sample(r, 4, 1000, 0.10), sample(r, 4, 1000, 0.10), 0.05, Unknown},
		{"real but below threshold", sample(r, 30, 1000, 0.003), sample(r, 30, 990, 0.003), 0.05, Same},
	}
	for _, c := range cases {
		got := Compare(c.old, c.new, c.threshold, 0.01)
		if got.Verdict != c.want {
			t.Errorf("%s: %v (%s), want %v", c.name, got.Verdict, got.Rule, c.want)
		}
		if got.Verdict == Unknown && got.Need == "" {
			t.Errorf("%s: UNKNOWN without saying what is needed", c.name)
		}
	}
	// 3 vs 3 cannot reach alpha 0.01: the message says how many runs would.
	c := Compare([]float64{1, 1.01, 1.02}, []float64{2, 2.01, 2.02}, 0.05, 0.01)
	if c.Verdict != Unknown || c.Need == "" {
		t.Errorf("3 vs 3 at 0.01: %v %q", c.Verdict, c.Need)
	}
}

func TestClassifySidesAndDrift(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	mk := func(n int, candFactor, drift float64) []Block {
		bs := make([]Block, n)
		for i := range bs {
			f := 1 + drift*float64(i)/float64(n) // machine drifts over the session
			bs[i] = Block{
				Good: 1000 * f * math.Exp(r.NormFloat64()*0.03),
				Bad:  600 * f * math.Exp(r.NormFloat64()*0.03),
				Cand: 1000 * candFactor * f * math.Exp(r.NormFloat64()*0.03),
			}
		}
		return bs
	}
	if c := Classify(mk(7, 1, 0), 0.003); c.Side != GoodSide || c.Position < 0.8 {
		t.Errorf("like good: %v pos %.2f (%s)", c.Side, c.Position, c.Rule)
	}
	if c := Classify(mk(7, 0.6, 0), 0.003); c.Side != BadSide || c.Position > 0.2 {
		t.Errorf("like bad: %v pos %.2f (%s)", c.Side, c.Position, c.Rule)
	}
	// A 10% linear drift over the session does not move the verdict.
	if c := Classify(mk(7, 0.6, -0.10), 0.003); c.Side != BadSide {
		t.Errorf("bad under drift: %v (%s)", c.Side, c.Rule)
	}
	// At the midpoint nothing can be decided.
	if c := Classify(mk(7, 0.8, 0), 0.003); c.Side != Undecided || c.Need == "" {
		t.Errorf("midpoint candidate: %v (%s)", c.Side, c.Rule)
	}
	// Too few blocks: undecided, with the number needed.
	if c := Classify(mk(3, 1, 0), 0.003); c.Side != Undecided || c.Need == "" {
		t.Errorf("3 blocks: %v %q", c.Side, c.Need)
	}
	// A candidate at 90% of good is on the good side but noted as partial.
	c := Classify(mk(12, 0.9*1.0+0.0, 0), 0.003)
	if c.Side != GoodSide || c.Note == "" {
		t.Errorf("partial change: %v note %q", c.Side, c.Note)
	}
}

func TestBudget(t *testing.T) {
	if got := ExpectedSteps(40); got != 9 {
		t.Errorf("ExpectedSteps(40) = %d, want 6+3", got)
	}
	if got := Looks(6, 18, 6); got != 3 {
		t.Errorf("Looks = %d", got)
	}
	b := Budget{Confidence: 0.95, Steps: 9, Looks: 3}
	sum := b.LookAlpha(1) + b.LookAlpha(2) + b.LookAlpha(3)
	if math.Abs(sum-0.05/9) > 1e-15 {
		t.Errorf("looks spend %v, want the step's %v", sum, 0.05/9)
	}
	// The first look must be able to decide a large effect with 6 runs per side.
	if MinP(6, 6) > b.LookAlpha(1) {
		t.Errorf("6 vs 6 cannot reach the first look's alpha %v", b.LookAlpha(1))
	}
}

// The equivalence test: with the true shift at the threshold, SAME comes
// at most sameAlpha of the time (plus the simulation's error); with no
// shift, two one-sided tests at sameAlpha say SAME more often than the
// two-sided interval at 1-sameAlpha did (the same error, half spent).
func TestSameIsTwoOneSidedTests(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const trials, n, noise, threshold, level = 4000, 20, 0.05, 0.05, 0.05
	var atMargin, tost, twoSided int
	for i := 0; i < trials; i++ {
		old := sample(r, n, 1000, noise)
		if CompareAt(old, sample(r, n, 1000*(1-threshold), noise), threshold, level, level).Verdict == Same {
			atMargin++
		}
		x, y := sample(r, n, 1000, noise), sample(r, n, 1000, noise)
		c := CompareAt(x, y, threshold, level, level)
		if c.Verdict == Same {
			tost++
		}
		if s := Shift(x, y, 1-level); s.Lo > -threshold && s.Hi < threshold {
			twoSided++
		}
	}
	// Binomial(4000, 0.05): sd 0.0034.
	if rate := float64(atMargin) / trials; rate > level+0.012 {
		t.Errorf("SAME with the shift at the threshold: %.3f of trials, want at most %.2f", rate, level)
	}
	if tost <= twoSided*11/10 {
		t.Errorf("SAME with no shift: %d of %d trials against %d for the two-sided interval: want clearly more", tost, trials, twoSided)
	}
	t.Logf("SAME at the margin %.3f; with no shift %d against %d of %d", float64(atMargin)/trials, tost, twoSided, trials)
}
