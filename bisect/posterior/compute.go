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
// change), in four steps: each measured commit's likelihood at every level,
// the groups of candidates no measurement tells apart, the mass of every
// hypothesis (none, one group, a split between two), and from those masses
// each candidate's P(first bad commit) and P(bad).
func (m *Model) compute() *state {
	if m.cache != nil {
		return m.cache
	}
	st := &state{lv: m.levels()}
	m.likelihoods(st)
	m.group(st)
	pr := m.pairs(st)
	h := m.hypotheses(st, pr)
	m.firstBad(st, pr, h)
	m.badness(st)
	m.cache = st
	return st
}

// likelihoods fills st.measured, st.fracs and st.ll: for each commit with
// runs or a mark by hand, the log-likelihood of its runs at each level of the
// grid (a mark: certainty at its level). Before both ends have runs there are
// no levels, and only the marks weigh.
func (m *Model) likelihoods(st *state) {
	for i := 1; i < len(m.cands); i++ {
		if _, known := m.known[i]; known || len(m.runs[i]) > 0 {
			st.measured = append(st.measured, i)
		}
	}
	effect := st.lv.Effect()
	if math.IsNaN(effect) {
		effect = 0
	}
	st.fracs = fractions(effect)
	st.ll = make([][]float64, len(st.measured))
	levelsKnown := len(m.good) > 0 && len(m.bad) > 0
	for mi, i := range st.measured {
		st.ll[mi] = make([]float64, len(st.fracs))
		if bad, known := m.known[i]; known {
			certain(st.ll[mi], bad)
		} else if levelsKnown {
			m.runsLikelihood(st, st.ll[mi], m.runs[i])
		}
	}
}

// runsLikelihood sets ll[li], for each level of the grid, to the
// log-likelihood of runs at that level. The levels are estimates: their error
// is shared by all the runs of the commit, which the scale of each run takes
// in (for normal runs, the variance of their mean becomes scale^2/n + level
// variance, the marginal likelihood over the level's error). Runs in a step's
// gap are no evidence; with none left every level is alike (all 0).
func (m *Model) runsLikelihood(st *state, ll []float64, runs []obs) {
	var rs []obs
	for _, r := range runs {
		if !st.lv.unknownRun(r) {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return
	}
	var lvar float64
	for _, r := range rs {
		lvar += st.lv.levelVar(r)
	}
	lvar /= float64(len(rs))
	lvar += st.lv.hostVar(rs)
	// A build's own level: the commit's offset and its reference's, each
	// of variance buildSD^2, shared by all of its runs like the level's
	// error.
	if b := m.buildSD / st.lv.Scale; b > 0 && st.lv.Scale > 0 {
		lvar += 2 * b * b
	}
	infl := math.Sqrt(1 + float64(len(rs))*lvar)
	delta := st.lv.Bad - st.lv.Good
	for li, f := range st.fracs {
		var s float64
		for _, r := range rs {
			s += st.lv.noise.at(r.v-st.lv.off(r.h)-(st.lv.Good+st.lv.Drift(r.t)+f*delta), infl)
		}
		ll[li] = s
	}
}

// group fills st.groups and st.groupOf: candidates contained by the same
// measured commits have one likelihood under every hypothesis, so the
// hypotheses are summed by group.
func (m *Model) group(st *state) {
	n := len(m.cands)
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
}

// pairing counts the split hypotheses: a first bad commit j moving the
// server to an intermediate level and a later k (j a proper ancestor of k)
// moving it to the bad one.
type pairing struct {
	count [][]int   // count[gj][gk]: pairs (j, k) with j in group gj, k in gk
	below [][]int32 // below[c][gk]: candidates k of group gk that c is a proper ancestor of (nil without intermediate levels)
	total int       // all pairs
}

// pairs counts the split hypotheses by group (none when the grid has no
// intermediate level).
func (m *Model) pairs(st *state) pairing {
	n, G := len(m.cands), len(st.groups)
	pr := pairing{count: make([][]int, G), below: make([][]int32, n)}
	for g := range pr.count {
		pr.count[g] = make([]int, G)
	}
	if len(st.fracs) <= 2 {
		return pr
	}
	for c := 0; c < n; c++ {
		pr.below[c] = make([]int32, G)
		for g := range st.groups {
			cnt := st.groups[g].members.andCount(m.desc[c])
			if st.groupOf[c] == g {
				cnt-- // c itself
			}
			pr.below[c][g] = int32(cnt)
			pr.count[st.groupOf[c]][g] += cnt
		}
	}
	for _, row := range pr.count {
		for _, c := range row {
			pr.total += c
		}
	}
	return pr
}

// masses is the posterior mass of every hypothesis, normalised: no culprit,
// one culprit in a group, a split between two groups (summed over the
// intermediate levels).
type masses struct {
	single []float64   // [g]
	split  [][]float64 // [gj][gk]
}

// hypothesis is one term of the posterior: no culprit, one culprit in group
// gj, or a split between groups gj and gk at one intermediate level; logp is
// its log prior plus the log-likelihood of the runs under it.
type hypothesis struct {
	kind   int // 0 none, 1 single group, 2 pair
	gj, gk int
	logp   float64
}

// hypotheses weighs every hypothesis by its prior and the likelihood of the
// runs under it, normalises, and sets st.pNone and st.pSplit.
func (m *Model) hypotheses(st *state, pr pairing) masses {
	last := len(st.fracs) - 1
	levelLL := func(level func(mi int) int) float64 {
		var s float64
		for mi := range st.measured {
			s += st.ll[mi][level(mi)]
		}
		return s
	}
	pNone, pSplit := PriorNone, PriorSplit
	if last <= 1 || pr.total == 0 {
		pSplit = 0
	}
	pSingle := 1 - pNone - pSplit
	n := len(m.cands)
	hs := []hypothesis{{kind: 0, logp: math.Log(pNone) + m.noneLL(st, levelLL(func(int) int { return 0 }))}}
	for g, gr := range st.groups {
		ll := levelLL(func(mi int) int {
			if gr.sig.has(mi) {
				return last
			}
			return 0
		})
		hs = append(hs, hypothesis{kind: 1, gj: g, logp: math.Log(pSingle*float64(gr.size)/float64(n)) + ll})
	}
	if pSplit > 0 {
		for gj := range st.groups {
			for gk := range st.groups {
				if c := pr.count[gj][gk]; c > 0 {
					prior := pSplit * float64(c) / float64(pr.total) / float64(last-1)
					hs = append(hs, splits(st, gj, gk, math.Log(prior), levelLL)...)
				}
			}
		}
	}
	return normalise(st, hs)
}

// splits are the hypotheses of a split between groups gj and gk, one per
// intermediate level li: the commits that contain gk at the bad level, those
// that contain gj only at li, the rest good.
func splits(st *state, gj, gk int, logPrior float64, levelLL func(level func(mi int) int) float64) []hypothesis {
	last := len(st.fracs) - 1
	sj, sk := st.groups[gj].sig, st.groups[gk].sig
	var hs []hypothesis
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
		hs = append(hs, hypothesis{kind: 2, gj: gj, gk: gk, logp: logPrior + ll})
	}
	return hs
}

// normalise turns the hypotheses' log masses into probabilities summed by
// group (and by pair of groups), and sets st.pNone and st.pSplit.
func normalise(st *state, hs []hypothesis) masses {
	maxLP := math.Inf(-1)
	for _, h := range hs {
		maxLP = math.Max(maxLP, h.logp)
	}
	var z float64
	for i := range hs {
		hs[i].logp = math.Exp(hs[i].logp - maxLP)
		z += hs[i].logp
	}
	G := len(st.groups)
	out := masses{single: make([]float64, G), split: make([][]float64, G)}
	for g := range out.split {
		out.split[g] = make([]float64, G)
	}
	for _, h := range hs {
		p := h.logp / z
		switch h.kind {
		case 0:
			st.pNone = p
		case 1:
			out.single[h.gj] += p
		case 2:
			out.split[h.gj][h.gk] += p
			st.pSplit += p
		}
	}
	return out
}

// noneLL is the log-likelihood of "no culprit in the range": every measured
// commit at the good level (allGood), and the bad revision's runs at the good
// level too instead of the bad one. Before both ends have runs, the marks
// alone.
func (m *Model) noneLL(st *state, allGood float64) float64 {
	if len(m.good) == 0 || len(m.bad) == 0 {
		return allGood
	}
	delta := st.lv.Bad - st.lv.Good
	for _, b := range m.bad {
		lvl := st.lv.Good + st.lv.Drift(b.t) + st.lv.off(b.h)
		allGood += st.lv.noise.at(b.v-lvl, 1) - st.lv.noise.at(b.v-(lvl+delta), 1)
	}
	return allGood
}

// firstBad sets st.pFirst: a candidate's share of its group's single mass,
// and of each split whose first change it can be.
func (m *Model) firstBad(st *state, pr pairing, h masses) {
	n := len(m.cands)
	st.pFirst = make([]float64, n)
	for c := 0; c < n; c++ {
		g := st.groupOf[c]
		p := h.single[g] / float64(st.groups[g].size)
		if pr.below[c] != nil {
			for gk := range st.groups {
				if pr.below[c][gk] > 0 && h.split[g][gk] > 0 {
					p += h.split[g][gk] * float64(pr.below[c][gk]) / float64(pr.count[g][gk])
				}
			}
		}
		st.pFirst[c] = p
	}
}

// badness sets st.pBad: P(bad) is P(the first bad commit is it or an
// ancestor).
func (m *Model) badness(st *state) {
	n := len(m.cands)
	st.pBad = make([]float64, n)
	if m.chain {
		acc := 0.0
		for c := n - 1; c >= 0; c-- {
			acc += st.pFirst[c]
			st.pBad[c] = acc
		}
		return
	}
	for x := 0; x < n; x++ {
		var s float64
		for c := range m.anc[x].each() {
			s += st.pFirst[c]
		}
		st.pBad[x] = s
	}
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
