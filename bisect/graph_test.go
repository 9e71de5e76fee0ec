package bisect

import (
	"slices"
	"testing"
)

// TestGraph: the first-parent line of a history with a merge follows first
// parents only, stops outside the range and where stop holds; descent
// follows every parent.
func TestGraph(t *testing.T) {
	// g (good, outside) <- a <- b <- m (merge of b and s) <- bad; s's parent is a.
	g := NewGraph([]Commit{
		{Hash: "bad", Parents: []string{"m"}},
		{Hash: "m", Parents: []string{"b", "s"}},
		{Hash: "s", Parents: []string{"a"}},
		{Hash: "b", Parents: []string{"a"}},
		{Hash: "a", Parents: []string{"g"}},
	})
	if got := g.FirstParentLine("bad", nil); !slices.Equal(got, []string{"bad", "m", "b", "a"}) {
		t.Errorf("first-parent line %v, want bad m b a (s is on the side branch, g outside)", got)
	}
	if got := g.FirstParentLine("bad", func(h string) bool { return h == "b" }); !slices.Equal(got, []string{"bad", "m"}) {
		t.Errorf("first-parent line stopped at b: %v, want bad m", got)
	}
	for _, c := range []struct {
		h, anc string
		want   bool
	}{
		{"bad", "s", true}, {"m", "s", true}, {"b", "s", false}, {"s", "s", true}, {"a", "b", false}, {"bad", "a", true},
	} {
		if got := g.Descends(c.h, c.anc); got != c.want {
			t.Errorf("Descends(%s, %s) = %v, want %v", c.h, c.anc, got, c.want)
		}
	}
}
