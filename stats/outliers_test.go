package stats

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestOutliers(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	xs := sample(r, 12, 1000, 0.017)
	xs[5] = 650 // a hiccup: -35% at 1.7% noise
	kept, out, _ := Outliers(xs, LogNoise(xs))
	if len(out) != 1 || out[0] != 650 || len(kept) != 11 {
		t.Errorf("one hiccup in 12 runs: left out %v, kept %d", out, len(kept))
	}
	if _, out, _ := Outliers(xs[:7], LogNoise(xs[:7])); out != nil {
		t.Errorf("7 runs: left out %v, want none (too few to call a run an outlier)", out)
	}
	// Three slow runs in 12 are the side's spread (bimodal), not a hiccup.
	bi := append([]float64(nil), xs...)
	bi[5], bi[6], bi[7] = 650, 660, 640
	if _, out, spread := Outliers(bi, LogNoise(bi)); out != nil || !spread {
		t.Errorf("3 slow runs of 12: left out %v (spread %v), want none, the side's spread", out, spread)
	}
	// Clean runs seldom lose one: the noise is pooled from both sides, as
	// CompareAt does.
	lost := 0
	for i := 0; i < 2000; i++ {
		a, b := sample(r, 12, 1000, 0.03), sample(r, 12, 1000, 0.03)
		if _, out, _ := Outliers(a, LogNoise(a, b)); len(out) > 0 {
			lost++
		}
	}
	if lost > 20 {
		t.Errorf("log-normal runs: a run left out in %d of 2000 samples of 12, want at most 1%%", lost)
	}
	t.Logf("log-normal runs: a run left out in %d of 2000 samples of 12", lost)
}

// TestOneOutlierPerSideDoesNotHideSame is the case a suite run met: 12 runs
// a side at 1.7% noise, endpoints that do not differ, one hiccup run each:
// the interval of all the runs is stretched past a 20% threshold, the one
// without the hiccups is not, and the rule says what was left out.
func TestOneOutlierPerSideDoesNotHideSame(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	old, new := sample(r, 12, 1000, 0.017), sample(r, 12, 1000, 0.017)
	old[3], new[8] = 600, 1500
	const sameAlpha = 0.00042 / 2
	all := shiftOf(pairDiffs(old, new), 12, 12, 1-2*sameAlpha)
	if all.Lo > -0.2 && all.Hi < 0.2 {
		t.Fatalf("the interval of all runs %+.3f..%+.3f already fits in ±20%%: not the case this tests", all.Lo, all.Hi)
	}
	c := CompareAt(old, new, 0.20, 0.00042, sameAlpha)
	if c.Verdict != Same || len(c.LeftOutOld) != 1 || len(c.LeftOutNew) != 1 || !strings.Contains(c.Rule, "2 runs left out") || !strings.Contains(c.Rule, "600") {
		t.Errorf("%s: %s (left out %v and %v); want SAME, naming the two runs left out", c.Verdict, c.Rule, c.LeftOutOld, c.LeftOutNew)
	}
	// A hiccup of one side only: SAME, saying that such hiccups are not
	// what it rules out.
	one := append([]float64(nil), new...)
	one[8] = Median(new)
	if c := CompareAt(old, one, 0.20, 0.00042, sameAlpha); c.Verdict != Same || !strings.Contains(c.Rule, "of one side only") {
		t.Errorf("one hiccup of old only: %s: %s; want SAME, saying the hiccups are of one side", c.Verdict, c.Rule)
	}
	// The test of DIFFERENT still reads every run.
	if c.Shift != shiftOf(pairDiffs(old, new), 12, 12, 1-0.00042) {
		t.Errorf("the shift's interval changed: %+v", c.Shift)
	}
}

// TestSameErrorWithOutliers: a change of exactly the threshold is called
// SAME about sameAlpha of the time or less (within three binomial standard
// errors; two one-sided tests: the interval at 1-2*sameAlpha) under three
// shapes of noise: log-normal, heavy-tailed (t with 3 degrees of freedom)
// and one run in 20 a hiccup 20-50% slower. With -v it prints the rates
// with and without the screen (docs/measurements.md).
func TestSameErrorWithOutliers(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	const (
		trials    = 4000
		sameAlpha = 0.01
		threshold = 0.05
		cv        = 0.03
	)
	draws := []struct {
		name  string
		noise func() float64
	}{
		{"log-normal", func() float64 { return math.Exp(r.NormFloat64() * cv) }},
		{"t3", func() float64 {
			// Student's t with 3 degrees of freedom, scaled to cv.
			z := r.NormFloat64()
			chi := 0.0
			for range 3 {
				g := r.NormFloat64()
				chi += g * g
			}
			return math.Exp(cv / math.Sqrt(3) * z / math.Sqrt(chi/3))
		}},
		{"outliers", func() float64 {
			f := math.Exp(r.NormFloat64() * cv)
			if r.Float64() < 0.05 {
				f *= 0.5 + 0.3*r.Float64()
			}
			return f
		}},
	}
	for _, d := range draws {
		name, noise := d.name, d.noise
		for _, n := range []int{12, 24} {
			wrong, wrongAll, same, sameAll := 0, 0, 0, 0
			for range trials {
				old, new := make([]float64, n), make([]float64, n)
				for i := range n {
					old[i] = 1000 * noise()
					new[i] = 1000 * (1 - threshold) * noise()
				}
				if c := CompareAt(old, new, threshold, 0.01, sameAlpha); c.Verdict == Same {
					wrong++
				}
				if iv := Shift(old, new, 1-2*sameAlpha); iv.Bounded() && iv.Lo > -threshold && iv.Hi < threshold {
					wrongAll++
				}
				// The same runs without a change: how often SAME is reached.
				for i := range new {
					new[i] /= 1 - threshold
				}
				if c := CompareAt(old, new, threshold, 0.01, sameAlpha); c.Verdict == Same {
					same++
				}
				if iv := Shift(old, new, 1-2*sameAlpha); iv.Bounded() && iv.Lo > -threshold && iv.Hi < threshold {
					sameAll++
				}
			}
			rate := float64(wrong) / trials
			// sameAlpha plus three binomial standard errors.
			if limit := sameAlpha + 3*math.Sqrt(sameAlpha*(1-sameAlpha)/trials); rate > limit {
				t.Errorf("%s noise, %d runs a side: a change of the threshold called SAME in %.2f%% (limit %.2f%%)", name, n, 100*rate, 100*limit)
			}
			t.Logf("%s noise, %d runs a side: wrong SAME %.2f%%, SAME without a change %.1f%% (from every run's interval: %.2f%% and %.1f%%)",
				name, n, 100*rate, 100*float64(same)/trials, 100*float64(wrongAll)/trials, 100*float64(sameAll)/trials)
		}
	}
}
