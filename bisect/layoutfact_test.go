package bisect

import "testing"

// The layout fact reads back as written; other text is not a layout.
func TestLayoutFact(t *testing.T) {
	if per, seed, _, _, ok := ParseLayout(LayoutSeed(123456789012)); !ok || !per || seed != 123456789012 {
		t.Errorf("seed: per-run %v seed %d ok %v", per, seed, ok)
	}
	if per, _, i, k, ok := ParseLayout(LayoutKept(2, 16)); !ok || per || i != 2 || k != 16 {
		t.Errorf("kept: per-run %v %d of %d ok %v", per, i, k, ok)
	}
	for _, v := range []string{"", "odd", "17 of 16", "0 of 3", "seed x", "seed 5 of 16", "3 of 16 junk", "seed 12abc"} {
		if _, _, _, _, ok := ParseLayout(v); ok {
			t.Errorf("%q read as a layout", v)
		}
	}
}
