package stats

import (
	"math"
	"testing"
)

func TestRobustCV(t *testing.T) {
	// Median 100, absolute deviations 0,2,2,4,4 -> MAD 2 -> 1.4826*2/100.
	if got := RobustCV([]float64{96, 98, 100, 102, 104}); math.Abs(got-0.029652) > 1e-9 {
		t.Errorf("RobustCV = %v, want 0.029652", got)
	}
	// One wild outlier leaves it unchanged.
	if got := RobustCV([]float64{96, 98, 100, 102, 10000}); math.Abs(got-0.029652) > 1e-9 {
		t.Errorf("RobustCV with an outlier = %v, want 0.029652", got)
	}
	if !math.IsNaN(RobustCV([]float64{1, 2})) {
		t.Error("RobustCV of 2 values is not NaN")
	}
}

// Large samples use the normal approximation of U's null distribution for
// the interval (the exact one costs about n^5) and agree with a Moses
// interval built from it; 500 runs per side finish at once.
func TestShiftLargeSamples(t *testing.T) {
	x, y := make([]float64, 500), make([]float64, 500)
	for i := range x {
		x[i] = 100 + float64(i%50)
		y[i] = 90 + float64(i%50)
	}
	s := Shift(x, y, 0.99)
	if !s.Bounded() || !(s.Lo < s.Est && s.Est < s.Hi) || s.Hi > 0 {
		t.Errorf("500 vs 500: %+v", s)
	}
	c := Compare(x, y, 0.05, 0.001)
	if c.Verdict != Different {
		t.Errorf("500 vs 500, -10%%: %v (%s)", c.Verdict, c.Rule)
	}
}
