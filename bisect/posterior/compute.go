package posterior

import (
	"math"
	"slices"
	"strings"
)

// state is the posterior of the model's current data.
type state struct {
	lv       Levels
	measured []int       // candidates with runs (the bad revision excluded: every hypothesis puts it at the bad level)
	fracs    []float64   // levels as fractions of the shift: 0, the intermediate ones, 1
	ll       [][]float64 // ll[mi][li]: log-likelihood of measured[mi]'s runs at level fracs[li]

	groupOf []int   // candidate -> group
	groups  []group // candidates contained by the same measured commits

	pNone, pSplit float64
	pFirst        []float64 // per candidate: P(it is the first bad commit)
	pBad          []float64 // per candidate: P(it contains the first bad commit: it is bad)
}

// group is a set of candidates whose hypotheses have one likelihood: the
// same measured commits contain them.
type group struct {
	sig     bitset // over positions in state.measured: the measured commits that contain the group
	members bitset // over candidates
	size    int
}

// splitGap is the smallest distance, in noise units, of an intermediate level
// from the good and the bad level: a split closer to an end than that is not
// told from it at a cost worth paying (it would keep every commit below a
// good one in doubt for many runs).
const splitGap = 1.5

// fractions is the grid of levels as fractions of the shift: 0 and 1, and
// between them intermediate levels at least splitGap noise units from both
// ends, half a noise unit apart (at most 12).
func fractions(effect float64) []float64 {
	out := []float64{0}
	if effect >= 2*splitGap && !math.IsInf(effect, 0) {
		n := int(math.Floor((effect-2*splitGap)/0.5)) + 1
		n = min(n, 12)
		for i := 0; i < n; i++ {
			lo, hi := splitGap/effect, 1-splitGap/effect
			f := lo
			if n > 1 {
				f = lo + (hi-lo)*float64(i)/float64(n-1)
			}
			out = append(out, f)
		}
	}
	return append(out, 1)
}

// compute makes the posterior of the current data (cached until the data
// change).
func (m *Model) compute() *state {
	if m.cache != nil {
		return m.cache
	}
	st := &state{lv: m.levels()}
	n := len(m.cands)
	for i := 1; i < n; i++ {
		if _, known := m.known[i]; known || len(m.runs[i]) > 0 {
			st.measured = append(st.measured, i)
		}
	}
	effect := st.lv.Effect()
	if math.IsNaN(effect) {
		effect = 0
	}
	st.fracs = fractions(effect)
	delta := st.lv.Bad - st.lv.Good
	st.ll = make([][]float64, len(st.measured))
	for mi, i := range st.measured {
		st.ll[mi] = make([]float64, len(st.fracs))
		if bad, known := m.known[i]; known {
			certain(st.ll[mi], bad)
			continue
		}
		// The levels are estimates: their error is shared by all the runs
		// of the commit, which the scale of each run takes in (for normal
		// runs, the variance of their mean becomes scale^2/n + level
		// variance, the marginal likelihood over the level's error).
		var rs []obs
		for _, r := range m.runs[i] {
			if !st.lv.unknown(r.t) {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 {
			continue // every run in a step's gap: no evidence (all levels alike)
		}
		var lvar float64
		for _, r := range rs {
			lvar += st.lv.levelVar(r.t)
		}
		lvar /= float64(len(rs))
		infl := math.Sqrt(1 + float64(len(rs))*lvar)
		for li, f := range st.fracs {
			var s float64
			for _, r := range rs {
				s += st.lv.noise.at(r.v-(st.lv.Good+st.lv.Drift(r.t)+f*delta), infl)
			}
			st.ll[mi][li] = s
		}
	}
	if len(m.good) == 0 || len(m.bad) == 0 {
		// No levels yet: the prior (and the marks).
		st.ll = make([][]float64, len(st.measured))
		for mi, i := range st.measured {
			st.ll[mi] = make([]float64, len(st.fracs))
			if bad, known := m.known[i]; known {
				certain(st.ll[mi], bad)
			}
		}
	}

	// Groups by signature.
	st.groupOf = make([]int, n)
	bySig := map[string]int{}
	mw := (len(st.measured) + 63) / 64
	for k := 0; k < n; k++ {
		sig := make(bitset, mw)
		for mi, x := range st.measured {
			if m.desc[k].has(x) {
				sig.set(mi)
			}
		}
		key := sigKey(sig)
		g, ok := bySig[key]
		if !ok {
			g = len(st.groups)
			bySig[key] = g
			st.groups = append(st.groups, group{sig: sig, members: newBitset(n)})
		}
		st.groups[g].members.set(k)
		st.groups[g].size++
		st.groupOf[k] = g
	}
	G := len(st.groups)
	last := len(st.fracs) - 1
	levelLL := func(level func(mi int) int) float64 {
		var s float64
		for mi := range st.measured {
			s += st.ll[mi][level(mi)]
		}
		return s
	}

	// Pair counts: (j, k) with j a proper ancestor of k, by groups.
	pairCount := make([][]int, G)
	for g := range pairCount {
		pairCount[g] = make([]int, G)
	}
	// below[c][gk]: candidates k of group gk that c is a proper ancestor of.
	below := make([][]int32, n)
	inter := len(st.fracs) - 2
	if inter > 0 {
		for c := 0; c < n; c++ {
			below[c] = make([]int32, G)
			for g := range st.groups {
				cnt := st.groups[g].members.andCount(m.desc[c])
				if st.groupOf[c] == g {
					cnt-- // c itself
				}
				below[c][g] = int32(cnt)
				pairCount[st.groupOf[c]][g] += cnt
			}
		}
	}
	totalPairs := 0
	for _, row := range pairCount {
		for _, c := range row {
			totalPairs += c
		}
	}
	pNone, pSplit := PriorNone, PriorSplit
	if inter <= 0 || totalPairs == 0 {
		pSplit = 0
	}
	pSingle := 1 - pNone - pSplit

	// Log posterior masses.
	type term struct {
		kind   int // 0 none, 1 single group, 2 pair
		gj, gk int
		li     int
		logp   float64
	}
	var terms []term
	none := levelLL(func(int) int { return 0 })
	for _, b := range m.bad {
		lvl := st.lv.Good + st.lv.Drift(b.t)
		none += st.lv.noise.at(b.v-lvl, 1) - st.lv.noise.at(b.v-(lvl+delta), 1)
	}
	if len(m.good) == 0 || len(m.bad) == 0 {
		none = levelLL(func(int) int { return 0 }) // the marks alone
	}
	terms = append(terms, term{kind: 0, logp: math.Log(pNone) + none})
	for g, gr := range st.groups {
		ll := levelLL(func(mi int) int {
			if gr.sig.has(mi) {
				return last
			}
			return 0
		})
		terms = append(terms, term{kind: 1, gj: g, logp: math.Log(pSingle*float64(gr.size)/float64(n)) + ll})
	}
	if pSplit > 0 {
		for gj := range st.groups {
			for gk := range st.groups {
				c := pairCount[gj][gk]
				if c == 0 {
					continue
				}
				sj, sk := st.groups[gj].sig, st.groups[gk].sig
				for li := 1; li < last; li++ {
					ll := levelLL(func(mi int) int {
						switch {
						case sk.has(mi):
							return last
						case sj.has(mi):
							return li
						}
						return 0
					})
					lp := math.Log(pSplit*float64(c)/float64(totalPairs)/float64(inter)) + ll
					terms = append(terms, term{kind: 2, gj: gj, gk: gk, li: li, logp: lp})
				}
			}
		}
	}
	maxLP := math.Inf(-1)
	for _, t := range terms {
		maxLP = math.Max(maxLP, t.logp)
	}
	var z float64
	for i := range terms {
		terms[i].logp = math.Exp(terms[i].logp - maxLP)
		z += terms[i].logp
	}
	st.pFirst = make([]float64, n)
	single := make([]float64, G)
	split := make([][]float64, G) // [gj][gk]: mass of the pair group over all levels
	for g := range split {
		split[g] = make([]float64, G)
	}
	for _, t := range terms {
		p := t.logp / z
		switch t.kind {
		case 0:
			st.pNone = p
		case 1:
			single[t.gj] += p
		case 2:
			split[t.gj][t.gk] += p
			st.pSplit += p
		}
	}
	for c := 0; c < n; c++ {
		g := st.groupOf[c]
		p := single[g] / float64(st.groups[g].size)
		if below[c] != nil {
			for gk := range st.groups {
				if below[c][gk] > 0 && split[g][gk] > 0 {
					p += split[g][gk] * float64(below[c][gk]) / float64(pairCount[g][gk])
				}
			}
		}
		st.pFirst[c] = p
	}
	// P(bad) = P(the first bad commit is it or an ancestor).
	st.pBad = make([]float64, n)
	if m.chain {
		acc := 0.0
		for c := n - 1; c >= 0; c-- {
			acc += st.pFirst[c]
			st.pBad[c] = acc
		}
	} else {
		for x := 0; x < n; x++ {
			var s float64
			for c := range m.anc[x].each() {
				s += st.pFirst[c]
			}
			st.pBad[x] = s
		}
	}
	m.cache = st
	return st
}

// certain sets the log-likelihoods of a commit marked by hand: 0 at its
// level (the good level, or the bad one), minus infinity at every other.
func certain(ll []float64, bad bool) {
	at := 0
	if bad {
		at = len(ll) - 1
	}
	for li := range ll {
		ll[li] = math.Inf(-1)
	}
	ll[at] = 0
}

func sigKey(b bitset) string {
	var sb strings.Builder
	for _, w := range b {
		for k := 0; k < 8; k++ {
			sb.WriteByte(byte(w >> (8 * k)))
		}
	}
	return sb.String()
}

// answerGroups groups the candidates that no measurement of testable commits
// can tell apart: those contained by the same testable commits (an untestable
// commit goes with the commits around it that carry its change).
func (m *Model) answerGroups() (groupOf []int, members [][]int) {
	if u := m.untestable.count(); u == m.agFor {
		return m.agOf, m.agMembers
	}
	defer func() { m.agOf, m.agMembers, m.agFor = groupOf, members, m.untestable.count() }()
	n := len(m.cands)
	groupOf = make([]int, n)
	byKey := map[string]int{}
	for k := 0; k < n; k++ {
		sig := newBitset(n)
		for x := range m.desc[k].each() {
			if !m.untestable.has(x) {
				sig.set(x)
			}
		}
		key := sigKey(sig)
		g, ok := byKey[key]
		if !ok {
			g = len(members)
			byKey[key] = g
			members = append(members, nil)
		}
		members[g] = append(members[g], k)
		groupOf[k] = g
	}
	return groupOf, members
}

// sortedDesc returns the indices of xs by decreasing value.
func sortedDesc(xs []float64) []int {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case xs[a] > xs[b]:
			return -1
		case xs[a] < xs[b]:
			return 1
		}
		return 0
	})
	return idx
}
