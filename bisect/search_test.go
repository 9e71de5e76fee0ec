package bisect

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
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

// chainIndex is i for commit "cNN".
func chainIndex(h string) int {
	var i int
	fmt.Sscanf(h, "c%d", &i)
	return i
}

// synthetic histories (Time 0) for the NextK tests: a chain and the merge DAG.
func mergeDAG() []Commit {
	return []Commit{
		{Hash: "a1", Parents: []string{"good"}},
		{Hash: "a2", Parents: []string{"a1"}},
		{Hash: "a3", Parents: []string{"a2"}},
		{Hash: "b1", Parents: []string{"a1"}},
		{Hash: "b2", Parents: []string{"b1"}},
		{Hash: "M", Parents: []string{"a3", "b2"}},
		{Hash: "a4", Parents: []string{"M"}},
		{Hash: "a5", Parents: []string{"a4"}},
	}
}

// randomSynthetic is a random DAG of n synthetic commits "n0".."n{n-1}"
// (Time 0 unless timed), parents before children; good is "n0", bad the last.
func randomSynthetic(rng *rand.Rand, n int, timed bool) []Commit {
	var cs []Commit
	for i := 1; i < n; i++ {
		ps := []string{fmt.Sprintf("n%d", i-1-rng.Intn(min(i, 3)))}
		if i > 2 && rng.Intn(4) == 0 {
			if o := fmt.Sprintf("n%d", 1+rng.Intn(i-1)); o != ps[0] {
				ps = append(ps, o)
			}
		}
		c := Commit{Hash: fmt.Sprintf("n%d", i), Parents: ps}
		if timed {
			c.Time = int64(rng.Intn(5))
		}
		cs = append(cs, c)
	}
	// bad reaches everything: merge the last commits in.
	last := fmt.Sprintf("n%d", n-1)
	cs = append(cs, Commit{Hash: "bad", Parents: []string{last, fmt.Sprintf("n%d", n-2)}})
	return cs
}

func TestNextKOneIsNext(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	check := func(name string, s *Search) {
		t.Helper()
		for step := 0; step < 50; step++ {
			h, ok := s.Next()
			k := s.NextK(1)
			if !ok {
				if len(k) != 0 {
					t.Fatalf("%s: Next over, NextK(1) = %v", name, k)
				}
				return
			}
			if len(k) != 1 || k[0] != h {
				t.Fatalf("%s step %d: NextK(1) = %v, Next = %s", name, step, k, h)
			}
			// Verdicts: skip one in five, else by a random culprit-free coin.
			switch rng.Intn(5) {
			case 0:
				s.Mark(h, Skip)
			case 1, 2:
				s.Mark(h, Good)
			default:
				s.Mark(h, Bad)
			}
		}
	}
	cs, hs := linear(40)
	s, _ := NewSearch(cs, []string{"good"}, hs[40])
	check("linear", s)
	s, _ = NewSearch(mergeDAG(), []string{"good"}, "a5")
	check("merge", s)
	for i := 0; i < 20; i++ {
		cs := randomSynthetic(rng, 10+rng.Intn(60), i%2 == 0)
		for _, fp := range []bool{false, true} {
			s, err := NewSearchOptions(cs, []string{"n0"}, "bad", Options{FirstParent: fp})
			if err != nil {
				t.Fatal(err)
			}
			check(fmt.Sprintf("random%d/fp=%v", i, fp), s)
		}
	}
}

func TestNextKQuartilesOnChain(t *testing.T) {
	cs, hs := linear(63)
	s, _ := NewSearch(cs, []string{"good"}, hs[63])
	got := s.NextK(3)
	if len(got) != 3 {
		t.Fatalf("NextK(3) = %v", got)
	}
	for i, h := range got {
		want := 16 * (i + 1) // c16, c32, c48 split c01..c63 in four parts of 16, 16, 16, 15
		if d := chainIndex(h) - want; d < -1 || d > 1 {
			t.Errorf("point %d: %s, want c%02d±1", i+1, h, want)
		}
	}
	// k beyond the eligible commits: all of them, once each, never bad.
	cs, hs = linear(5)
	s, _ = NewSearch(cs, []string{"good"}, hs[5])
	s.Mark("c02", Skip)
	got = s.NextK(10)
	slices.Sort(got)
	if strings.Join(got, ",") != "c01,c03,c04" {
		t.Errorf("NextK(10) on 5 with one skipped = %v", got)
	}
	if s.NextK(0) != nil {
		t.Error("NextK(0) not empty")
	}
}

func TestNextKDistinctEligible(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for i := 0; i < 30; i++ {
		cs := randomSynthetic(rng, 10+rng.Intn(70), i%2 == 1)
		for _, fp := range []bool{false, true} {
			s, _ := NewSearchOptions(cs, []string{"n0"}, "bad", Options{FirstParent: fp})
			if c := s.Candidates(); len(c) > 3 {
				s.Mark(c[len(c)/2], Skip)
			}
			for _, k := range []int{2, 3, 5, 8} {
				got := s.NextK(k)
				eligible := 0
				for _, h := range s.Candidates() {
					if h != "bad" && s.marks[h] == Unmarked {
						eligible++
					}
				}
				if len(got) != min(k, eligible) {
					t.Errorf("NextK(%d) gave %d of %d eligible", k, len(got), eligible)
				}
				seen := map[string]bool{}
				for _, h := range got {
					if seen[h] || h == "bad" || !s.IsCandidate(h) || s.marks[h] != Unmarked {
						t.Errorf("NextK(%d) = %v: %s repeated, bad, tested or not a candidate", k, got, h)
					}
					seen[h] = true
				}
			}
		}
	}
}

// TestParallelRounds marks every point of a NextK round, in random order,
// checking each verdict with Consistent first, until the culprit is found.
func TestParallelRounds(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	const n = 63
	for culprit := 1; culprit <= n; culprit++ {
		cs, hs := linear(n)
		s, _ := NewSearch(cs, []string{"good"}, hs[n])
		rounds := 0
		for {
			pts := s.NextK(3)
			if len(pts) == 0 {
				break
			}
			rounds++
			rng.Shuffle(len(pts), func(i, j int) { pts[i], pts[j] = pts[j], pts[i] })
			for _, h := range pts {
				m := Good
				if chainIndex(h) >= culprit {
					m = Bad
				}
				if !s.Consistent(h, m) {
					t.Fatalf("culprit %d: %s %s inconsistent", culprit, h, m)
				}
				s.Mark(h, m)
			}
		}
		if r := s.Result(); r.Outcome != Found || r.FirstBad != hs[culprit] {
			t.Fatalf("culprit %d: %+v", culprit, r)
		}
		if rounds > 3 { // 63 -> 16 -> 4 -> 1
			t.Errorf("culprit %d: %d rounds of 3", culprit, rounds)
		}
	}
}

func TestBadOnDescendantDoesNotWiden(t *testing.T) {
	cs, hs := linear(63)
	s, _ := NewSearch(cs, []string{"good"}, hs[63])
	s.Mark("c16", Bad)
	s.Mark("c32", Bad) // a later point of the same round, now outside
	if n := len(s.Candidates()); n != 16 || s.bad != "c16" {
		t.Fatalf("bad %s, %d candidates; want c16, 16", s.bad, n)
	}
}

func TestConsistent(t *testing.T) {
	cs, hs := linear(40)
	s, _ := NewSearch(cs, []string{"good"}, hs[40])
	s.Mark("c30", Bad)
	s.Mark("c10", Good)
	for _, c := range []struct {
		h    string
		m    Mark
		want bool
	}{
		{"c20", Good, true}, {"c20", Bad, true}, {"c20", Skip, true}, // a candidate
		{"c35", Good, false}, {"c35", Bad, true}, // a descendant of bad
		{"c30", Good, false}, {"c40", Good, false}, // bad itself, the first bad
		{"c05", Bad, false}, {"c10", Bad, false}, {"good", Bad, false}, // ancestors of good
		{"c05", Good, true}, {"c05", Skip, true}, {"c35", Skip, true},
	} {
		if got := s.Consistent(c.h, c.m); got != c.want {
			t.Errorf("Consistent(%s, %s) = %v, want %v", c.h, c.m, got, c.want)
		}
	}
	// An inconsistent verdict changes nothing.
	before := strings.Join(s.Candidates(), ",")
	s.Mark("c35", Good)
	s.Mark("c05", Bad)
	if after := strings.Join(s.Candidates(), ","); after != before {
		t.Errorf("inconsistent marks moved the range: %s -> %s", before, after)
	}
	if !s.IsCandidate("c20") || s.IsCandidate("c10") || s.IsCandidate("c35") || !s.IsCandidate("c30") {
		t.Error("IsCandidate")
	}
	// Good on a commit beside the bad one, reaching a commit marked bad: inconsistent.
	s2, _ := NewSearch(mergeDAG(), []string{"good"}, "a5")
	s2.Mark("b1", Bad)
	if s2.Consistent("b2", Good) || !s2.Consistent("a3", Good) {
		t.Error("merge DAG: good on a descendant of b1")
	}
}

// TestBadBeside marks bad two commits of one round that are on different
// branches: the first bad commit is a common ancestor.
func TestBadBeside(t *testing.T) {
	// good - a1 - a2 - a3 - M - a4 - a5, b1 - b2 from a1: culprit a1.
	s, _ := NewSearch(mergeDAG(), []string{"good"}, "a5")
	s.Mark("a3", Bad)
	s.Mark("b2", Bad) // beside a3: the only candidate both reach is a1
	if r := s.Result(); r.Outcome != Found || r.FirstBad != "a1" {
		t.Fatalf("got %+v, candidates %v", r, s.Candidates())
	}
	// Criss-cross: A and B both merge p1 and p2; bad A and bad B leave two
	// newest common candidates (p1, p2), neither known bad: no change.
	cc := []Commit{
		{Hash: "r", Parents: []string{"good"}},
		{Hash: "p1", Parents: []string{"r"}},
		{Hash: "p2", Parents: []string{"r"}},
		{Hash: "A", Parents: []string{"p1", "p2"}},
		{Hash: "B", Parents: []string{"p2", "p1"}},
		{Hash: "top", Parents: []string{"A", "B"}},
	}
	s, _ = NewSearch(cc, []string{"good"}, "top")
	s.Mark("A", Bad)
	s.Mark("B", Bad)
	if s.bad != "A" || len(s.Candidates()) != 4 {
		t.Fatalf("bad %s, candidates %v", s.bad, s.Candidates())
	}
}

func TestFirstParentSynthetic(t *testing.T) {
	// good - a1 - M - a2 (bad), M's second parent b2 - b1 - good.
	cs := []Commit{
		{Hash: "a1", Parents: []string{"good"}},
		{Hash: "b1", Parents: []string{"good"}},
		{Hash: "b2", Parents: []string{"b1"}},
		{Hash: "M", Parents: []string{"a1", "b2"}},
		{Hash: "a2", Parents: []string{"M"}},
	}
	s, err := NewSearchOptions(cs, []string{"good"}, "a2", Options{FirstParent: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Candidates(), ","); got != "a2,M,a1" {
		t.Fatalf("candidates %s", got)
	}
	// The regression is in b1: first-parent bisection blames the merge.
	r, _ := drive(t, s, func(h string) Mark {
		if h == "a1" {
			return Good
		}
		return Bad
	})
	if r.Outcome != Found || r.FirstBad != "M" {
		t.Fatalf("got %+v", r)
	}
}
