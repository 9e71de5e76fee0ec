package posterior

import (
	"math"

	"github.com/perfbisect/perfbisect/stats"
)

// Point is one candidate's state in the posterior.
type Point struct {
	Commit string
	// First is the posterior probability that the commit is the first bad
	// commit; Bad that it is bad (it or an ancestor is the first bad commit).
	First, Bad float64
	// Runs is the number of runs of the commit (the bad revision's references included).
	Runs int
	// Position is where the commit's runs sit between the good level (0) and
	// the bad one (1), the median of its drift-corrected runs, with a 95%
	// interval [Lo, Hi]; NaN when it has no runs.
	Position, Lo, Hi float64
}

// Posterior returns every candidate's point, in candidate order (newest
// first), with the estimated levels and the probabilities of "no culprit in
// the range" and of "the change is split over two commits".
func (m *Model) Posterior() (points []Point, lv Levels, pNone, pSplit float64) {
	st := m.compute()
	delta := st.lv.Bad - st.lv.Good
	for i, h := range m.cands {
		p := Point{Commit: h, First: st.pFirst[i], Bad: st.pBad[i], Position: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
		rs := m.runs[i]
		if i == 0 {
			rs = m.bad
		}
		p.Runs = len(rs)
		if len(rs) > 0 && delta != 0 {
			v := make([]float64, len(rs))
			for k, r := range rs {
				v[k] = (r.v - st.lv.Drift(r.t) - st.lv.off(r.h) - st.lv.Good) / delta
			}
			p.Position = stats.Median(v)
			// The median's standard error, about 1.25 sigma/sqrt(n).
			se := 1.25 * st.lv.Scale / math.Abs(delta) / math.Sqrt(float64(len(rs)))
			p.Lo, p.Hi = p.Position-1.96*se, p.Position+1.96*se
		}
		points = append(points, p)
	}
	return points, st.lv, st.pNone, st.pSplit
}

// Answer is the posterior's answer at a confidence.
type Answer struct {
	// Done is set when one set of candidates that cannot be told apart (a
	// single commit, or a commit with untestable neighbours) holds the first
	// bad commit with at least the confidence.
	Done bool
	// Commits is that set (newest first): one commit, or the range bordered
	// by untestable commits. When not Done, the smallest set of candidates
	// that holds the confidence, most probable first.
	Commits []string
	// Mass is the posterior probability of Commits.
	Mass float64
}

// Answer reports whether the posterior names the first bad commit with
// probability at least confidence (0.5 < confidence < 1), and which.
func (m *Model) Answer(confidence float64) Answer {
	st := m.compute()
	groupOf, members := m.answerGroups()
	mass := make([]float64, len(members))
	for c, p := range st.pFirst {
		mass[groupOf[c]] += p
	}
	best := 0
	for g := range mass {
		if mass[g] > mass[best] {
			best = g
		}
	}
	if mass[best] >= confidence {
		var out []string
		for _, c := range members[best] {
			out = append(out, m.cands[c])
		}
		return Answer{Done: true, Commits: out, Mass: mass[best]}
	}
	var a Answer
	for _, c := range sortedDesc(st.pFirst) {
		if a.Mass >= confidence {
			break
		}
		a.Commits = append(a.Commits, m.cands[c])
		a.Mass += st.pFirst[c]
	}
	return a
}

// Cost says what measuring a commit costs: a run of a commit already built
// costs 1; the first run of one not built costs 1 + BuildRuns (the build's
// time in runs), spread over the runs the commit is expected to take.
type Cost struct {
	Built     func(commit string) bool
	BuildRuns float64
}

// NextK returns up to k distinct candidates to run in one round (parallel
// capacity): for each i = 1..k, the commit of highest score for a split of
// the posterior at the i/(k+1) quantile (for k = 1 the median: Horstein's
// rule, weighed by cost).
func (m *Model) NextK(k int, c Cost) []string {
	st := m.compute()
	effect := st.lv.Effect()
	if math.IsNaN(effect) || effect <= 0 {
		effect = 1
	}
	kexp := math.Min(math.Max(math.Round(8/(effect*effect)), 1), 20)
	var out []string
	taken := map[int]bool{}
	for i := 1; i <= k; i++ {
		q := float64(i) / float64(k+1)
		// The commits nearest the quantile among built ones and among
		// unbuilt ones; their information is weighed against the cost.
		bestBuilt, bestNew := -1, -1
		var distBuilt, distNew float64
		for x := 1; x < len(m.cands); x++ {
			if _, known := m.known[x]; known || m.untestable.has(x) || taken[x] {
				continue
			}
			p := st.pBad[x]
			if p <= 0 || p >= 1 {
				continue // decided beyond doubt: a run there says nothing
			}
			dist := math.Abs(p - q)
			if c.Built != nil && c.Built(m.cands[x]) || len(m.runs[x]) > 0 {
				if bestBuilt < 0 || dist < distBuilt {
					bestBuilt, distBuilt = x, dist
				}
			} else if bestNew < 0 || dist < distNew {
				bestNew, distNew = x, dist
			}
		}
		// The information of a run is that of the side of the commit, which
		// is a coin of probability pBad whatever the quantile aimed at.
		side := func(x int) float64 { return math.Min(st.pBad[x], 1-st.pBad[x]) }
		best := bestBuilt
		if bestNew >= 0 {
			scoreNew := binaryInfo(side(bestNew), effect) / (1 + c.BuildRuns/kexp)
			if bestBuilt < 0 || scoreNew > binaryInfo(side(bestBuilt), effect) {
				best = bestNew
			}
		}
		if best < 0 {
			break
		}
		taken[best] = true
		out = append(out, m.cands[best])
	}
	return out
}

// binaryInfo is the mutual information, in nats, between a side drawn bad
// with probability p and one run's value, normal with unit variance, centred
// on 0 (good) or effect (bad).
func binaryInfo(p, effect float64) float64 {
	if p <= 0 || p >= 1 {
		return 0
	}
	const steps = 120
	lo, hi := -6.0, effect+6
	h := (hi - lo) / steps
	var s float64
	for i := 0; i <= steps; i++ {
		y := lo + float64(i)*h
		a := math.Exp(-y * y / 2)
		b := math.Exp(-(y - effect) * (y - effect) / 2)
		mix := (1-p)*a + p*b
		w := h
		if i == 0 || i == steps {
			w /= 2
		}
		if a > 0 {
			s += w * (1 - p) * a * math.Log(a/mix)
		}
		if b > 0 {
			s += w * p * b * math.Log(b/mix)
		}
	}
	return s / math.Sqrt(2*math.Pi)
}

// Information is the information, in nats, that one run at the posterior
// median (a commit as likely good as bad) gives about its side when the
// good-bad shift is effect noise units: the mutual information of the binary
// channel with normal noise.
func Information(effect float64) float64 { return binaryInfo(0.5, effect) }

// Contains reports whether candidate ancestor is commit or one of its
// ancestors in the range (in first-parent mode, along first parents): whether
// commit carries ancestor's change. False for commits outside the candidates.
func (m *Model) Contains(commit, ancestor string) bool {
	i, ok := m.index[commit]
	j, ok2 := m.index[ancestor]
	return ok && ok2 && m.anc[i].has(j)
}
