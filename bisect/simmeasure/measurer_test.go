package simmeasure

import (
	"context"
	"math/rand/v2"
	"testing"
)

// A per-build level is the commit's: every run of a commit shares it,
// commits differ by it, and it stays whatever else is measured between.
func TestBuildEffectIsPerCommit(t *testing.T) {
	cs, hs := Chain(3)
	m := &Measurer{Commits: cs, Base: 1000, BuildEffect: 0.05, Rand: rand.New(rand.NewPCG(1, 2))}
	tps := func(h string) float64 {
		runs, err := m.Measure(context.Background(), h, 1)
		if err != nil {
			t.Fatal(err)
		}
		return runs[0].TPS
	}
	a1, b1, a2 := tps(hs[1]), tps(hs[2]), tps(hs[1])
	if a1 != a2 || a1 == b1 || a1 == 1000 {
		t.Errorf("runs of one commit %.1f and %.1f, another %.1f: want the first two equal (no noise), the third apart, none at the base 1000", a1, a2, b1)
	}
}
