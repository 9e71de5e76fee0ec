// Package bisect is the search at the heart of perfbisect: it resolves refs,
// lists the candidate commits between good and bad, picks the commit that best
// halves them (git's best-bisection rule on the commit DAG, merges included,
// the same commit `git rev-list --bisect` names), takes verdicts (good, bad,
// skip) and stops with the first bad commit, or with a range when skipped
// commits border it. It is pure: it sees commits and verdicts, never a server,
// so it is tested in milliseconds and drives every command (start, git bisect
// run, compare).
package bisect

import (
	"container/heap"
	"fmt"
	"math"
	"sort"
)

// Commit is one node of the history: full 40-hex hash, subject line, parents
// (first parent first, as git stores them) and committer time. Time orders
// the candidates as git rev-list does (newest first); commits that all have
// Time 0 (synthetic histories) are ordered by a breadth-first walk from bad
// over the parents, which is what git does with equal dates.
type Commit struct {
	Hash    string
	Subject string
	Parents []string
	Time    int64 // committer time, unix seconds
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

// String is the verdict's word: good, bad, skip or untested.
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

// Options changes which commits a search considers.
type Options struct {
	// FirstParent restricts the candidates to bad's first-parent chain, as
	// git bisect --first-parent (git rev-list --bisect --first-parent) does:
	// the commits on the chain that are not ancestors of a good commit. A
	// merge on the chain stands for its whole side branch, so the first bad
	// commit found can be a merge.
	FirstParent bool
}

// Search is a bisection over the commits that are ancestors of bad (inclusive)
// and not ancestors of any good commit (inclusive). Mark commits as they are
// decided; Next (or NextK, to test several at once) gives the commit to test;
// Result says when it is over.
type Search struct {
	commits map[string]Commit
	opts    Options
	bad     string
	good    map[string]bool
	marks   map[string]Mark

	// Derived from the above by refresh.
	goodAnc map[string]bool // the good commits and their ancestors in the range
	order   []string        // candidates in git rev-list order (newest first)
	index   map[string]int  // position in order
	parents [][]int         // parents inside the candidates, by position; first parent only in first-parent mode

	next *nextPick // cached answer of Next, nil when stale
}

type nextPick struct {
	hash string
	ok   bool
}

// NewSearchOptions builds a search from the commits of the range. commits must
// hold every ancestor of bad that is not an ancestor of a good commit, with
// their parent links (parents outside the range may be absent; Range gives
// such a list); bad must be among them. It returns an error when bad is
// missing or is itself one of the good commits.
func NewSearchOptions(commits []Commit, good []string, bad string, opts Options) (*Search, error) {
	s := &Search{commits: map[string]Commit{}, opts: opts, bad: bad, good: map[string]bool{}, marks: map[string]Mark{}}
	for _, c := range commits {
		s.commits[c.Hash] = c
	}
	if _, ok := s.commits[bad]; !ok {
		return nil, fmt.Errorf("bad commit %s is not in the range", bad)
	}
	for _, g := range good {
		s.good[g] = true
	}
	s.refresh()
	if len(s.order) == 0 {
		return nil, fmt.Errorf("bad commit %s is an ancestor of a good commit", bad)
	}
	return s, nil
}

// Mark records a verdict. A bad candidate becomes the new upper end; a good
// commit removes itself and its ancestors from the candidates; a skipped
// commit stays a candidate but is never proposed again.
//
// When several commits of one round (see NextK) are marked one after the
// other, some may no longer be candidates when their verdict arrives:
//   - bad on a descendant of the current bad adds nothing and changes nothing;
//   - bad on a commit beside the current bad (neither ancestor nor
//     descendant): the first bad commit is a common ancestor of both, so when
//     the candidates that are ancestors of it have a single newest commit
//     (one that reaches all the others), that commit becomes the bad end;
//     otherwise nothing changes;
//   - good on a commit that is not a candidate removes its ancestors, as any
//     good verdict does.
//
// A verdict that contradicts the marks so far (see Consistent: good on a
// descendant of a bad commit, bad on an ancestor of a good one) is recorded
// but leaves the candidates unchanged; callers should check Consistent first
// and treat a contradiction as a flaky measurement.
func (s *Search) Mark(hash string, m Mark) {
	consistent := s.Consistent(hash, m)
	s.marks[hash] = m
	if consistent {
		switch m {
		case Bad:
			s.markBad(hash)
		case Good:
			s.good[hash] = true
		}
	}
	s.refresh()
}

// markBad moves the bad end for a bad verdict on hash (see Mark).
func (s *Search) markBad(hash string) {
	if _, ok := s.index[hash]; ok {
		s.bad = hash
		return
	}
	if _, ok := s.commits[hash]; !ok {
		return
	}
	anc := s.ancestors([]string{hash})
	if anc[s.bad] {
		return // a descendant of bad: implied
	}
	// Beside bad: the first bad commit is among the candidates hash reaches.
	in := map[int]bool{}
	for i, h := range s.order {
		if anc[h] {
			in[i] = true
		}
	}
	child := map[int]bool{}
	for i := range in {
		for _, p := range s.parents[i] {
			if in[p] {
				child[p] = true
			}
		}
	}
	head := -1
	for i := range in {
		if !child[i] {
			if head >= 0 {
				return // several newest commits: none of them is known bad
			}
			head = i
		}
	}
	if head >= 0 {
		s.bad = s.order[head]
	}
}

// Consistent reports whether marking h with m agrees with the marks so far,
// as far as the commits of the range tell: skip (or untested) always does;
// good does unless h is the current bad or a descendant of it or of any
// commit marked bad; bad does unless h is a good commit or an ancestor of one.
// A good or bad verdict on a candidate is always consistent. Mark ignores
// inconsistent verdicts (it records them and leaves the candidates as they
// are), so a caller that marks several commits of one round should ask first.
func (s *Search) Consistent(h string, m Mark) bool {
	switch m {
	case Good:
		anc := s.ancestors([]string{h})
		if anc[s.bad] {
			return false
		}
		for x, mk := range s.marks {
			if mk == Bad && anc[x] {
				return false
			}
		}
		return true
	case Bad:
		return !s.goodAnc[h]
	default:
		return true
	}
}

// Candidates returns the commits that may still be the first bad commit, in
// git rev-list order: newest committer time first, ties in the order a walk
// from bad reaches them (so the current bad comes first). In first-parent
// mode they are bad's first-parent chain, newest first.
func (s *Search) Candidates() []string { return append([]string(nil), s.order...) }

// refresh recomputes the candidates after a change of bad or good.
func (s *Search) refresh() {
	s.next = nil
	s.goodAnc = s.ancestors(keys(s.good))
	if s.opts.FirstParent {
		s.order = s.firstParentChain()
	} else {
		s.order = s.revListOrder()
	}
	s.index = make(map[string]int, len(s.order))
	for i, h := range s.order {
		s.index[h] = i
	}
	s.parents = make([][]int, len(s.order))
	for i, h := range s.order {
		for _, p := range s.commits[h].Parents {
			if j, ok := s.index[p]; ok {
				s.parents[i] = append(s.parents[i], j)
			}
			if s.opts.FirstParent {
				break
			}
		}
	}
}

// revListOrder walks from bad through parents inside the range, stopping at
// good commits and their ancestors, in the order of git's limit_list: a queue
// on committer time, newest first, ties in the order of insertion (a commit
// is inserted when the first of its children is taken out, parents in
// order).
func (s *Search) revListOrder() []string {
	if s.goodAnc[s.bad] {
		return nil
	}
	var q walkQueue
	seen := map[string]bool{s.bad: true}
	heap.Push(&q, walkItem{hash: s.bad, time: s.commits[s.bad].Time, seq: 0})
	seq := 1
	var out []string
	for q.Len() > 0 {
		it := heap.Pop(&q).(walkItem)
		out = append(out, it.hash)
		for _, p := range s.commits[it.hash].Parents {
			c, ok := s.commits[p]
			if !ok || seen[p] || s.goodAnc[p] {
				continue
			}
			seen[p] = true
			heap.Push(&q, walkItem{hash: p, time: c.Time, seq: seq})
			seq++
		}
	}
	return out
}

// firstParentChain is bad, its first parent, that one's first parent... up to
// the first commit that is outside the range or an ancestor of a good commit.
func (s *Search) firstParentChain() []string {
	return Graph(s.commits).FirstParentLine(s.bad, func(h string) bool { return s.goodAnc[h] })
}

type walkItem struct {
	hash string
	time int64
	seq  int
}

type walkQueue []walkItem

func (q walkQueue) Len() int { return len(q) }
func (q walkQueue) Less(i, j int) bool {
	if q[i].time != q[j].time {
		return q[i].time > q[j].time
	}
	return q[i].seq < q[j].seq
}
func (q walkQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *walkQueue) Push(x any)   { *q = append(*q, x.(walkItem)) }
func (q *walkQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
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

// Next returns the commit to test next and true, or "" and false when the
// search is over (see Result). The choice follows git's best-bisection rule
// (bisect.c, do_find_bisection) and, when nothing was skipped, is the very
// commit `git rev-list --bisect bad ^good...` (with --first-parent in
// first-parent mode) prints: w(c) is the number of candidates c reaches
// (itself included; first parents only in first-parent mode) and N the number
// of candidates; in git's list order (the reverse of Candidates), the weights
// of merges are counted first, then the others from their parent's, and the
// first commit found approximately half-way (|2w - N| <= 1, or < N/1024 for
// large N) is returned at once; failing that, the first commit in list order
// that maximises min(w, N-w). Skipped and tested commits and the current bad
// are never proposed: the next best one is.
//
// One known difference: under clock skew (a commit older than its parent),
// git's walk may stop before it finds that some commits are ancestors of a
// good commit, keep them in its list and even propose one; Search computes
// the ancestry exactly, so there its candidates (and then possibly its
// choice) differ from git's.
func (s *Search) Next() (string, bool) {
	if s.next == nil {
		s.next = &nextPick{}
		if len(s.order) > 1 {
			if best, _ := s.bisection(s.eligible, true); best >= 0 {
				s.next.hash, s.next.ok = s.order[best], true
			}
		}
	}
	return s.next.hash, s.next.ok
}

// eligible says whether the candidate at position i may be proposed.
func (s *Search) eligible(i int) bool {
	h := s.order[i]
	return h != s.bad && s.marks[h] == Unmarked
}

// NextK returns up to k distinct candidates to test at once (for parallel
// capacity): untested, unskipped, never the current bad, chosen so that their
// verdicts split the candidates into k+1 parts as equal as possible. NextK(1)
// is Next. For k > 1, for each i = 1..k in turn, it takes the eligible
// candidate not taken yet whose weight w (candidates it reaches, see Next) is
// closest to i*N/(k+1) (ties to the first in git's list order): on a linear
// chain these are the k quantile points. It returns fewer than k hashes when
// fewer are eligible, and none when the search is over or k < 1.
//
// Verdicts on several commits of one round can contradict each other: once
// one point is marked bad, a later point that descends from it and comes back
// good is inconsistent (so is bad on an ancestor of a good point). Check each
// verdict with Consistent before Mark, which ignores inconsistent ones.
func (s *Search) NextK(k int) []string {
	if k < 1 {
		return nil
	}
	if k == 1 {
		if h, ok := s.Next(); ok {
			return []string{h}
		}
		return nil
	}
	n := len(s.order)
	if n <= 1 {
		return nil
	}
	_, w := s.bisection(s.eligible, false)
	taken := map[int]bool{}
	var out []string
	for i := 1; i <= k; i++ {
		target := float64(i) * float64(n) / float64(k+1)
		best, bestD := -1, math.Inf(1)
		for j := n - 1; j >= 0; j-- {
			if taken[j] || !s.eligible(j) {
				continue
			}
			if d := math.Abs(float64(w[j]) - target); d < bestD {
				best, bestD = j, d
			}
		}
		if best < 0 {
			break
		}
		taken[best] = true
		out = append(out, s.order[best])
	}
	return out
}

// bisection is git's do_find_bisection over the candidates. git's list is the
// reverse of s.order (oldest first), so positions are visited from n-1 down
// to 0. With early, it returns the first eligible commit found approximately
// half-way in git's visiting order; otherwise (or when there is none) it
// counts every weight and returns the first eligible commit in list order with
// the best min(w, N-w), or -1 when none is eligible. w holds the weights
// counted so far (all of them unless it returned early).
func (s *Search) bisection(eligible func(int) bool, early bool) (best int, w []int) {
	n := len(s.order)
	w = make([]int, n)
	counted := 0
	for i := range w {
		switch len(s.parents[i]) {
		case 0:
			w[i] = 1
			counted++
		case 1:
			w[i] = -1
		default:
			w[i] = -2
		}
	}
	halfway := func(i int) bool {
		if !early || !eligible(i) {
			return false
		}
		d := 2*w[i] - n
		if d < 0 {
			d = -d
		}
		return d <= 1 || d < n/1024
	}
	// Merges first, each by a walk over its ancestors among the candidates.
	stamp := make([]int, n)
	gen := 0
	var stack []int
	for i := n - 1; i >= 0; i-- {
		if w[i] != -2 {
			continue
		}
		gen++
		cnt := 0
		stack = append(stack[:0], i)
		stamp[i] = gen
		for len(stack) > 0 {
			j := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			cnt++
			for _, p := range s.parents[j] {
				if stamp[p] != gen {
					stamp[p] = gen
					stack = append(stack, p)
				}
			}
		}
		w[i] = cnt
		if halfway(i) {
			return i, w
		}
		counted++
	}
	// Then single-parent commits from their parent, pass after pass.
	for counted < n {
		progress := false
		for i := n - 1; i >= 0; i-- {
			if w[i] >= 0 {
				continue
			}
			q := s.parents[i][0]
			if w[q] < 0 {
				continue
			}
			w[i] = w[q] + 1
			counted++
			progress = true
			if halfway(i) {
				return i, w
			}
		}
		if !progress {
			break // a cycle in malformed input; do not spin
		}
	}
	best, bestD := -1, -1
	for i := n - 1; i >= 0; i-- {
		if !eligible(i) || w[i] < 0 {
			continue
		}
		if d := min(w[i], n-w[i]); d > bestD {
			best, bestD = i, d
		}
	}
	return best, w
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

// Result returns the current answer: Found when only bad is left, Ambiguous
// when every remaining candidate other than bad was skipped (Range lists
// them, bad included, in Candidates order), Running otherwise.
func (s *Search) Result() Result {
	if len(s.order) == 1 {
		return Result{Outcome: Found, FirstBad: s.bad}
	}
	if _, more := s.Next(); more {
		return Result{Outcome: Running}
	}
	return Result{Outcome: Ambiguous, Range: s.Candidates()}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
