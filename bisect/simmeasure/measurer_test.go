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

// Over k layouts a commit's runs rotate over k levels; a layout per run
// draws a new level every run.
func TestLayouts(t *testing.T) {
	cs, hs := Chain(3)
	levels := func(layouts, runs int) map[float64]int {
		m := &Measurer{Commits: cs, Base: 1000, BuildEffect: 0.05, Layouts: layouts, Rand: rand.New(rand.NewPCG(1, 2))}
		seen := map[float64]int{}
		for i := 0; i < runs; i++ {
			r, err := m.Measure(context.Background(), hs[1], 1)
			if err != nil {
				t.Fatal(err)
			}
			seen[r[0].TPS]++
			// Another commit's runs between do not move the rotation.
			if _, err := m.Measure(context.Background(), hs[2], 1); err != nil {
				t.Fatal(err)
			}
		}
		return seen
	}
	if l := levels(4, 12); len(l) != 4 {
		t.Errorf("4 layouts, 12 runs: %d levels %v, want 4 levels 3 runs each", len(l), l)
	} else {
		for v, n := range l {
			if n != 3 {
				t.Errorf("4 layouts, 12 runs: level %.1f in %d runs, want 3", v, n)
			}
		}
	}
	if l := levels(LayoutPerRun, 12); len(l) != 12 {
		t.Errorf("a layout per run, 12 runs: %d levels", len(l))
	}
	if l := levels(0, 5); len(l) != 1 {
		t.Errorf("the build's own layout, 5 runs: %d levels", len(l))
	}
}
