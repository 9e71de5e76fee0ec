package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestDesignSpendsItsAlphaOverItsLooks(t *testing.T) {
	d := Design{Start: 7, Batch: 4, Max: 18, Alpha: 0.006}
	if d.Looks() != 4 || d.N(1) != 7 || d.N(2) != 11 || d.N(4) != 18 || d.N(9) != 18 {
		t.Errorf("looks %d, N 1..4 = %d %d %d %d", d.Looks(), d.N(1), d.N(2), d.N(3), d.N(4))
	}
	sum := 0.0
	for k := 1; k <= d.Looks(); k++ {
		sum += d.LookAlpha(k)
	}
	if math.Abs(sum-d.Alpha) > 1e-15 || d.LookAlpha(1) != d.Alpha/2 {
		t.Errorf("looks spend %v of %v, first %v", sum, d.Alpha, d.LookAlpha(1))
	}
	// The equivalence test's looks: one level, above Bonferroni's share
	// (the looks share runs), below the whole error.
	if same := d.SameAlpha(1); same != d.SameAlpha(d.Looks()) || same <= d.Alpha/float64(d.Looks()) || same >= d.Alpha {
		t.Errorf("the equivalence test's levels: first %v, last %v, want one level between %v and %v", same, d.SameAlpha(d.Looks()), d.Alpha/float64(d.Looks()), d.Alpha)
	}
	if one := (Design{Start: 10, Batch: 5, Max: 10, Alpha: 0.01}); one.Looks() != 1 || one.LookAlpha(1) != 0.01 {
		t.Errorf("single look: %d looks, alpha %v", one.Looks(), one.LookAlpha(1))
	}
}

// Power is checked against the rejection rate of the real test on simulated
// normal samples (fixed seed, 3000 replicates, so about ±0.02 of noise).
func TestPowerMatchesSimulation(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		shift float64 // in standard deviations of one run
		n     int
		alpha float64
	}{{1, 10, 0.0028}, {1, 18, 0.0028}, {2, 8, 0.0028}, {2, 10, 0.0028}, {1.5, 12, 0.01}, {0.5, 30, 0.05}} {
		hits := 0
		const reps = 3000
		for i := 0; i < reps; i++ {
			x, y := make([]float64, c.n), make([]float64, c.n)
			for j := range x {
				x[j], y[j] = r.NormFloat64()+c.shift, r.NormFloat64()
			}
			if p, _ := MannWhitney(x, y); p <= c.alpha {
				hits++
			}
		}
		sim := float64(hits) / reps
		got := Power(c.shift/math.Sqrt2, c.n, c.alpha)
		if math.Abs(got-sim) > 0.11 {
			t.Errorf("shift %.1f sd, n=%d, alpha %.2g: Power %.3f, simulated %.3f", c.shift, c.n, c.alpha, got, sim)
		}
	}
	if Power(5, 5, 0.001) != 0 {
		t.Error("5 vs 5 cannot reach 0.001, yet Power > 0")
	}
	if Power(0, 20, 0.05) > 0.06 {
		t.Errorf("no effect: Power %.3f > alpha", Power(0, 20, 0.05))
	}
}

func TestPlanStartsWhereTheFirstLookCanDecide(t *testing.T) {
	// A large effect: the fewest runs that can reach the first look's level.
	d, ok := Plan(5, 0.0056, 2, 18)
	if !ok || d.Start != RunsNeeded(d.LookAlpha(1)) || MinP(d.Start, d.Start) > d.LookAlpha(1) {
		t.Errorf("large effect: %v reachable %v", d, ok)
	}
	// A medium effect starts later, with power >= planPower at the first look.
	m, ok := Plan(1.2, 0.0056, 2, 18)
	if !ok || m.Start <= d.Start || Power(1.2, m.Start, m.LookAlpha(1)) < planPower || Power(1.2, m.Start-1, (Design{Start: m.Start - 1, Batch: m.Batch, Max: 18, Alpha: 0.0056}).LookAlpha(1)) >= planPower {
		t.Errorf("medium effect: %v reachable %v", m, ok)
	}
	// A small effect cannot be reached with 18 blocks.
	if _, ok := Plan(0.3, 0.0056, 2, 18); ok {
		t.Error("effect 0.3 with 18 blocks reported reachable")
	}
	if n := NeededN(0.3, 0.0056, 0.9); n < 100 || n > 400 {
		t.Errorf("NeededN(0.3) = %d", n)
	}
	// The expected runs lie between the first look and the limit.
	if e := ExpectedN(1.2, m); e < float64(m.Start) || e > 18 {
		t.Errorf("ExpectedN = %.1f outside [%d, 18]", e, m.Start)
	}
}

func TestLogNoiseIsNearlyUnbiased(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	sum := 0.0
	const reps = 4000
	for i := 0; i < reps; i++ {
		a, b := make([]float64, 6), make([]float64, 6)
		for j := range a {
			a[j], b[j] = 500*math.Exp(r.NormFloat64()*0.05), 300*math.Exp(r.NormFloat64()*0.05)
		}
		sum += LogNoise(a, b)
	}
	if m := sum / reps; m < 0.045 || m > 0.055 {
		t.Errorf("mean LogNoise of 6+6 runs at 5%% noise: %.4f", m)
	}
	if !math.IsNaN(LogNoise([]float64{1}, []float64{2})) || !math.IsNaN(LogNoise([]float64{1, -1, 2})) {
		t.Error("too few or non-positive values: want NaN")
	}
}

func TestMidpointAlphaNeverSpendsMoreThanTheBudget(t *testing.T) {
	b := Budget{Confidence: 0.95, Steps: ExpectedSteps(40)}
	total := 2 * b.StepAlpha() // endpoints and confirmation
	for k := 1; k <= 200; k++ {
		total += b.MidpointAlpha(k)
	}
	if total > 0.05+1e-12 {
		t.Errorf("200 midpoint decisions spend %v, more than 1-confidence", total)
	}
	if b.MidpointAlpha(1) != b.StepAlpha() || b.MidpointAlpha(b.Steps-2) != b.StepAlpha()/2 {
		t.Errorf("midpoint alphas %v %v", b.MidpointAlpha(1), b.MidpointAlpha(b.Steps-2))
	}
}

// The normal approximation that criticalU uses beyond exactUpTo agrees with
// the exact critical value where both are computed, and large limits plan at
// once (the exact distribution's cost grows like n^6).
func TestCriticalUApproximationAndLargeLimits(t *testing.T) {
	for _, n := range []int{12, 20, 25} {
		for _, alpha := range []float64{0.05, 0.0028} {
			exact, _ := criticalU(n, alpha)
			nn := float64(n * n)
			approx := math.Floor(nn/2 - 0.5 - normalQuantile(1-alpha/2)*math.Sqrt(nn*float64(2*n+1)/12))
			// Conservative by a few units in the far tail; used only to plan.
			if approx > exact || exact-approx > 4 {
				t.Errorf("n=%d alpha %.2g: exact %v, normal %v", n, alpha, exact, approx)
			}
		}
	}
	if _, ok := Plan(0.05, 0.005, 2, 1000); ok {
		t.Error("effect 0.05 reachable with 1000 runs per side")
	}
	if d, ok := Plan(0.2, 0.005, 2, 1000); !ok || d.Start < 100 || !d.CanDecide() {
		t.Errorf("effect 0.2, limit 1000: %v reachable %v", d, ok)
	}
	if MinP(5, 5) != 2.0/252 && math.Abs(MinP(5, 5)-2.0/252) > 1e-15 {
		t.Errorf("MinP(5,5) = %v", MinP(5, 5))
	}
	if (Design{Start: 10, Batch: 2, Max: 10, Alpha: 1e-6}).CanDecide() {
		t.Error("10 vs 10 at 1e-6 reported decidable")
	}
}

// PocockLevel against Pocock's published constants (Pocock 1977, Table 1;
// Jennison & Turnbull 2000, Table 2.1: two-sided 0.05, equal steps, which
// one-sided 0.025 matches to the second decimal) and against the crossing
// rate of simulated random walks at 17 looks of 6 runs (the endpoints'
// default design).
func TestPocockLevel(t *testing.T) {
	for _, c := range []struct {
		looks int
		c     float64
	}{{1, 1.960}, {2, 2.178}, {5, 2.413}, {10, 2.555}} {
		ns := make([]int, c.looks)
		for i := range ns {
			ns[i] = 8 * (i + 1)
		}
		if got := normalQuantile(1 - PocockLevel(ns, 0.025)); math.Abs(got-c.c) > 0.01 {
			t.Errorf("%d looks: boundary %.3f, want Pocock's %.3f", c.looks, got, c.c)
		}
	}
	var ns []int
	for n := 6; n < 100; n += 6 {
		ns = append(ns, n)
	}
	ns = append(ns, 100)
	const alpha = 0.05
	c := normalQuantile(1 - PocockLevel(ns, alpha))
	r := rand.New(rand.NewPCG(5, 6))
	const walks = 20000
	crossed := 0
	for i := 0; i < walks; i++ {
		s, n := 0.0, 0
		for _, look := range ns {
			for ; n < look; n++ {
				s += r.NormFloat64()
			}
			if s/math.Sqrt(float64(n)) >= c {
				crossed++
				break
			}
		}
	}
	// Binomial(20000, 0.05): sd 0.0015.
	if rate := float64(crossed) / walks; math.Abs(rate-alpha) > 0.005 {
		t.Errorf("walks crossing Pocock's boundary %.3f at 17 looks: %.4f, want %.2f", c, rate, alpha)
	}
}
