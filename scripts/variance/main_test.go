package main

import (
	"math"
	"math/rand/v2"
	"testing"
)

// draw makes y[build][snapshot][run] with the given SDs per level.
func draw(rng *rand.Rand, a, b, n int, build, snap, run float64) [][][]float64 {
	y := make([][][]float64, a)
	for i := range y {
		bl := build * rng.NormFloat64()
		y[i] = make([][]float64, b)
		for j := range y[i] {
			sl := snap * rng.NormFloat64()
			for k := 0; k < n; k++ {
				y[i][j] = append(y[i][j], 5+bl+sl+run*rng.NormFloat64())
			}
		}
	}
	return y
}

// TestNestedSplitRecoversLevels: with many builds and snapshots the split
// finds each level's SD, and a level that is not there gets about 0 and no
// significant F test.
func TestNestedSplitRecoversLevels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	v := nestedSplit(draw(rng, 200, 4, 10, 0.02, 0.01, 0.03))
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"run", v.Run, 0.03}, {"snapshot", v.Snapshot, 0.01}, {"build", v.Build, 0.02}} {
		if math.Abs(c.got-c.want) > 0.15*c.want {
			t.Errorf("%s SD %.4f, want %.4f within 15%%", c.name, c.got, c.want)
		}
	}
	if v.PSnapshot > 1e-6 || v.PBuild > 1e-6 {
		t.Errorf("p-values %.3g %.3g, want tiny for levels that are there", v.PSnapshot, v.PBuild)
	}

	// No snapshot and no build level: the F tests reject at their level.
	rejects := 0
	for trial := 0; trial < 400; trial++ {
		v := nestedSplit(draw(rng, 3, 2, 10, 0, 0, 0.03))
		if v.PSnapshot < 0.05 {
			rejects++
		}
	}
	if rejects < 8 || rejects > 36 { // 20 expected
		t.Errorf("snapshot F test rejected %d of 400 null trials at 5%%", rejects)
	}
}

// TestNestedSplitOneSnapshot: with one snapshot per build, the build level
// is tested against the runs and the snapshot level is not reported.
func TestNestedSplitOneSnapshot(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	v := nestedSplit(draw(rng, 300, 1, 8, 0.02, 0, 0.03))
	if !math.IsNaN(v.PSnapshot) || v.Snapshot != 0 {
		t.Errorf("snapshot level %v (p %v) with one snapshot per build", v.Snapshot, v.PSnapshot)
	}
	if math.Abs(v.Build-0.02) > 0.003 {
		t.Errorf("build SD %.4f, want 0.02", v.Build)
	}
}
