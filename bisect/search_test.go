package bisect

import (
	"fmt"
	"math"
	"testing"
)

// linear makes good <- c1 <- ... <- cn (bad = cn); returns commits (without good) and hashes.
func linear(n int) ([]Commit, []string) {
	var cs []Commit
	hs := []string{"good"}
	for i := 1; i <= n; i++ {
		h := fmt.Sprintf("c%02d", i)
		cs = append(cs, Commit{Hash: h, Parents: []string{hs[i-1]}})
		hs = append(hs, h)
	}
	return cs, hs
}

// drive runs a search to the end with an oracle; it returns the result and the number of tests.
func drive(t *testing.T, s *Search, oracle func(string) Mark) (Result, int) {
	t.Helper()
	steps := 0
	for {
		h, ok := s.Next()
		if !ok {
			break
		}
		steps++
		if steps > 1000 {
			t.Fatal("search does not end")
		}
		s.Mark(h, oracle(h))
	}
	return s.Result(), steps
}

func TestLinearFindsEveryCulpritInLog2Steps(t *testing.T) {
	const n = 40
	for culprit := 1; culprit <= n; culprit++ {
		cs, hs := linear(n)
		s, err := NewSearch(cs, []string{"good"}, hs[n])
		if err != nil {
			t.Fatal(err)
		}
		r, steps := drive(t, s, func(h string) Mark {
			var i int
			fmt.Sscanf(h, "c%d", &i)
			if i >= culprit {
				return Bad
			}
			return Good
		})
		if r.Outcome != Found || r.FirstBad != hs[culprit] {
			t.Fatalf("culprit %d: got %+v", culprit, r)
		}
		if max := int(math.Ceil(math.Log2(n))); steps > max {
			t.Errorf("culprit %d: %d steps, want <= %d", culprit, steps, max)
		}
	}
}

func TestSkipTriesNeighbourAndReportsRange(t *testing.T) {
	cs, hs := linear(40)
	// c11 does not build; culprit c23: the answer is still exact.
	s, _ := NewSearch(cs, []string{"good"}, hs[40])
	r, _ := drive(t, s, func(h string) Mark {
		var i int
		fmt.Sscanf(h, "c%d", &i)
		switch {
		case i == 11 || i == 20:
			return Skip
		case i >= 23:
			return Bad
		}
		return Good
	})
	if r.Outcome != Found || r.FirstBad != "c23" {
		t.Fatalf("skip away from the culprit: %+v", r)
	}
	// The culprit's parent c22 is untestable: the answer is the range {c22, c23}.
	s, _ = NewSearch(cs, []string{"good"}, hs[40])
	r, _ = drive(t, s, func(h string) Mark {
		var i int
		fmt.Sscanf(h, "c%d", &i)
		switch {
		case i == 22:
			return Skip
		case i >= 23:
			return Bad
		}
		return Good
	})
	if r.Outcome != Ambiguous || len(r.Range) != 2 || r.Range[0] != "c23" || r.Range[1] != "c22" {
		t.Fatalf("skipped parent: %+v", r)
	}
}

// A DAG with a side branch merged back:
//
//	good - a1 - a2 - a3 - M - a4 - a5 (bad)
//	          \- b1 - b2 -/
func TestMergeDAG(t *testing.T) {
	cs := []Commit{
		{Hash: "a1", Parents: []string{"good"}},
		{Hash: "a2", Parents: []string{"a1"}},
		{Hash: "a3", Parents: []string{"a2"}},
		{Hash: "b1", Parents: []string{"a1"}},
		{Hash: "b2", Parents: []string{"b1"}},
		{Hash: "M", Parents: []string{"a3", "b2"}},
		{Hash: "a4", Parents: []string{"M"}},
		{Hash: "a5", Parents: []string{"a4"}},
	}
	parents := map[string][]string{}
	for _, c := range cs {
		parents[c.Hash] = c.Parents
	}
	var reaches func(from, to string) bool
	reaches = func(from, to string) bool {
		if from == to {
			return true
		}
		for _, p := range parents[from] {
			if reaches(p, to) {
				return true
			}
		}
		return false
	}
	for _, culprit := range []string{"a1", "a2", "a3", "b1", "b2", "M", "a4", "a5"} {
		s, err := NewSearch(cs, []string{"good"}, "a5")
		if err != nil {
			t.Fatal(err)
		}
		r, _ := drive(t, s, func(h string) Mark {
			if reaches(h, culprit) {
				return Bad
			}
			return Good
		})
		if r.Outcome != Found || r.FirstBad != culprit {
			t.Errorf("culprit %s: %+v", culprit, r)
		}
	}
	// The first pick halves the 8 candidates as git does: a commit with 4 reachable.
	s, _ := NewSearch(cs, []string{"good"}, "a5")
	h, _ := s.Next()
	w := s.weights()
	if w[h] != 4 && w[h] != 3 {
		t.Errorf("first pick %s reaches %d of 8", h, w[h])
	}
}

func TestNewSearchRejectsMissingBad(t *testing.T) {
	cs, _ := linear(3)
	if _, err := NewSearch(cs, []string{"good"}, "nope"); err == nil {
		t.Error("want error")
	}
}
