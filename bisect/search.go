// Package bisect is the search at the heart of perfbisect: it resolves refs,
// lists the candidate commits between good and bad, picks the commit that best
// halves them (git's best-bisection rule on the commit DAG, merges included),
// takes verdicts (good, bad, skip) and stops with the first bad commit, or with
// a range when skipped commits border it. It is pure: it sees commits and
// verdicts, never a server, so it is tested in milliseconds and drives every
// command (start, git bisect run, compare).
package bisect

import (
	"fmt"
	"math/bits"
	"sort"
)

// Commit is one node of the history: full 40-hex hash, subject line and parents.
type Commit struct {
	Hash    string
	Subject string
	Parents []string
}

// Mark is a verdict on a commit.
type Mark int

// Marks, in git bisect's terms (old/new are the same as good/bad).
const (
	Unmarked Mark = iota
	Good
	Bad
	Skip
)

func (m Mark) String() string {
	switch m {
	case Good:
		return "good"
	case Bad:
		return "bad"
	case Skip:
		return "skip"
	default:
		return "untested"
	}
}

// Search is a bisection over the commits that are ancestors of bad (inclusive)
// and not ancestors of any good commit (inclusive). Mark commits as they are
// decided; Next gives the commit to test; Result says when it is over.
type Search struct {
	commits map[string]Commit
	bad     string
	good    map[string]bool
	marks   map[string]Mark
	order   []string // candidates, newest first (children before parents)
}

// NewSearch builds a search from the commits of the range. commits must hold
// every ancestor of bad that is not an ancestor of a good commit, with their
// parent links (parents outside the range may be absent); bad must be among
// them. It returns an error when bad is missing.
func NewSearch(commits []Commit, good []string, bad string) (*Search, error) {
	s := &Search{commits: map[string]Commit{}, bad: bad, good: map[string]bool{}, marks: map[string]Mark{}}
	for _, c := range commits {
		s.commits[c.Hash] = c
	}
	if _, ok := s.commits[bad]; !ok {
		return nil, fmt.Errorf("bad commit %s is not in the range", bad)
	}
	for _, g := range good {
		s.good[g] = true
	}
	s.order = s.candidates()
	return s, nil
}

// Mark records a verdict. A bad commit becomes the new upper end; a good commit
// removes itself and its ancestors from the candidates; a skipped commit stays a
// candidate but is never proposed again.
func (s *Search) Mark(hash string, m Mark) {
	s.marks[hash] = m
	switch m {
	case Bad:
		s.bad = hash
	case Good:
		s.good[hash] = true
	}
	s.order = s.candidates()
}

// Candidates returns the commits that may still be the first bad commit, newest
// first: ancestors of the current bad (inclusive) that are not ancestors of a
// good commit.
func (s *Search) Candidates() []string { return append([]string(nil), s.order...) }

// candidates walks from bad through parents inside the range, stopping at good
// commits and their ancestors, and returns the set in topological order
// (children before parents).
func (s *Search) candidates() []string {
	goodAnc := s.ancestors(keys(s.good))
	seen := map[string]bool{}
	var out []string
	// Depth-first post-order over parents, reversed, gives children before parents.
	var visit func(h string)
	visit = func(h string) {
		if seen[h] || goodAnc[h] {
			return
		}
		c, ok := s.commits[h]
		if !ok {
			return
		}
		seen[h] = true
		for _, p := range c.Parents {
			visit(p)
		}
		out = append(out, h)
	}
	visit(s.bad)
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// ancestors returns the commits of the range reachable from roots (inclusive).
func (s *Search) ancestors(roots []string) map[string]bool {
	seen := map[string]bool{}
	stack := append([]string(nil), roots...)
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[h] {
			continue
		}
		seen[h] = true
		if c, ok := s.commits[h]; ok {
			stack = append(stack, c.Parents...)
		}
	}
	return seen
}

// Next returns the commit to test next and true, or "" and false when the search
// is over (see Result). The choice is git's best bisection: the untested,
// unskipped candidate c (other than bad) that maximises min(w(c), N-w(c)), where
// w(c) is the number of candidates reachable from c (its own ancestors in the
// range, itself included) and N the number of candidates. Ties go to the newest
// commit in topological order. Skipped commits are never proposed; the next best
// is, as with git bisect skip.
func (s *Search) Next() (string, bool) {
	n := len(s.order)
	if n <= 1 {
		return "", false
	}
	w := s.weights()
	best, bestScore := "", -1
	for _, h := range s.order {
		if h == s.bad || s.marks[h] == Skip {
			continue
		}
		score := min(w[h], n-w[h])
		if score > bestScore {
			best, bestScore = h, score
		}
	}
	if best == "" {
		return "", false
	}
	return best, true
}

// weights counts, for every candidate, the candidates reachable from it
// (itself included), with one bitset per commit: O(N^2/64) words.
func (s *Search) weights() map[string]int {
	n := len(s.order)
	idx := make(map[string]int, n)
	for i, h := range s.order {
		idx[h] = i
	}
	words := (n + 63) / 64
	sets := make([][]uint64, n)
	// Parents come after children in s.order: fill from the end.
	for i := n - 1; i >= 0; i-- {
		set := make([]uint64, words)
		set[i/64] |= 1 << (i % 64)
		for _, p := range s.commits[s.order[i]].Parents {
			if j, ok := idx[p]; ok {
				for k := range set {
					set[k] |= sets[j][k]
				}
			}
		}
		sets[i] = set
	}
	w := make(map[string]int, n)
	for i, h := range s.order {
		c := 0
		for _, x := range sets[i] {
			c += bits.OnesCount64(x)
		}
		w[h] = c
	}
	return w
}

// Outcome is how a search ended.
type Outcome string

// Outcomes of Result.
const (
	Found     Outcome = "found"     // exactly one first bad commit
	Ambiguous Outcome = "ambiguous" // skipped commits border the first bad commit: a range
	Running   Outcome = "running"   // not over yet
)

// Result is the answer of a finished search.
type Result struct {
	Outcome  Outcome
	FirstBad string   // when Found
	Range    []string // when Ambiguous: the commits that may be the first bad one, newest first
}

// Result returns the current answer: Found when only bad is left, Ambiguous when
// every remaining candidate other than bad was skipped, Running otherwise.
func (s *Search) Result() Result {
	if len(s.order) == 1 {
		return Result{Outcome: Found, FirstBad: s.bad}
	}
	if _, more := s.Next(); more {
		return Result{Outcome: Running}
	}
	r := Result{Outcome: Ambiguous, Range: s.Candidates()}
	return r
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
