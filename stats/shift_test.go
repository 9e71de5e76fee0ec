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
