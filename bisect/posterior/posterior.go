// Package posterior is probabilistic (Bayesian) bisection: a posterior
// distribution over which commit of a range is the first bad one, updated by
// every run, and the choice of the next commit to run by the information a
// run there is expected to give per unit of cost.
//
// The method is Horstein's (1963) noisy bisection, which Ben-Or and Hassidim
// ("The Bayesian learner is optimal for noisy binary search", FOCS 2008)
// showed optimal and Karp and Kleinberg ("Noisy binary search and its
// applications", SODA 2007) analysed for monotone noisy comparisons, adapted
// to what a performance bisection sees:
//
//   - A run does not answer "good" or "bad": it is a number. Its likelihood
//     under a hypothesis is the noise density around the level the
//     hypothesis gives its commit: the good level, the bad level, or a level
//     between. The density is the references' own (a kernel density of their
//     residuals, so a bimodal server is judged by its two modes) over a
//     Student-t floor (heavy tails, so that one hiccup run cannot carry a
//     verdict), widened by the levels' own error.
//   - The levels and the noise are estimated, robustly (medians, the median
//     absolute deviation), from the reference runs of the good and the bad
//     revision that the session keeps interleaving with the candidates; a
//     slow drift of the machine is followed by a kernel smoother over the
//     references in run order, broken where the references show a step, so
//     that a machine that slows down does not look like a culprit.
//   - Hypotheses: "commit k is the first bad commit" for each candidate k (a
//     commit is bad when k is it or one of its ancestors: the commit graph,
//     not a line); "the change is split over two commits" j then k (commits
//     with j and without k sit at an intermediate level, estimated on a grid);
//     and "no culprit in the range" (the bad revision is at the good level).
//     The first bad commit of a split is j, the first one on the path from
//     good.
//   - Commits never measured are only told apart by the commits that were:
//     hypotheses whose culprits are contained by the same measured commits
//     have one likelihood, so the posterior is computed over those groups
//     (a handful), not over every commit.
//
// The package is pure: it sees commits, run values and which commits cannot
// be measured; the session (package session) measures.
package posterior

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/stats"
)

// Priors: the prior probability of "no culprit in the range" and of "the
// change is split over two commits"; the rest is spread evenly over the
// candidates as the single first bad commit.
const (
	PriorNone  = 0.02
	PriorSplit = 0.10
)

// Nu is the degrees of freedom of the Student-t part of a run's noise
// density: heavy enough tails that a run far from both levels (a hiccup)
// weighs about as much for one as for the other.
const Nu = 4

// DriftBandwidth is the standard deviation, in runs, of the Gaussian kernel
// that smooths the reference runs into the machine's drift.
const DriftBandwidth = 24.0

// Model is the posterior over the first bad commit of a range. Add runs with
// Observe and ObserveReference, mark commits that cannot be measured with
// Untestable; Posterior, Next and Answer read it. Values are natural logs of
// the metric (any direction: the levels are estimated). Not safe for
// concurrent use.
type Model struct {
	cands []string       // candidate order of bisect.Search.Candidates (newest first; cands[0] is bad)
	index map[string]int // position in cands
	anc   []bitset       // anc[i]: candidates reachable from i over parents in the range (itself included)
	desc  []bitset       // desc[i]: candidates that reach i (itself included)
	chain bool           // the candidates are one line: cands[i+1] is the parent of cands[i]

	runs       map[int][]obs // candidate runs by candidate
	good, bad  []obs         // reference runs
	untestable bitset
	known      map[int]bool // candidates marked by hand: true bad, false good (certain)
	t          int          // runs seen, the time axis of the drift

	buildSD float64 // spread of a build's own level (SetBuildEffect), log scale

	cache *state // posterior of the current data, nil when stale
	// answer groups (answerGroups), for the untestable commits so far
	agOf      []int
	agMembers [][]int
	agFor     int // untestable count they were made for; -1: none yet
}

type obs struct {
	t int     // sequence number of the run
	v float64 // log of the metric
	h int     // the host that measured it (ObserveOn); 0 on one machine
}

// New makes the model of the range of bisect.NewSearchOptions(commits, good,
// bad, opts): the same candidates (in first-parent mode, bad's first-parent
// chain, whose merges stand for their side branches). It returns that
// function's errors.
func New(commits []bisect.Commit, good, bad string, opts bisect.Options) (*Model, error) {
	s, err := bisect.NewSearchOptions(commits, []string{good}, bad, opts)
	if err != nil {
		return nil, err
	}
	m := &Model{cands: s.Candidates(), index: map[string]int{}, runs: map[int][]obs{}, known: map[int]bool{}, agFor: -1}
	n := len(m.cands)
	for i, h := range m.cands {
		m.index[h] = i
	}
	parents := map[string][]string{}
	for _, c := range commits {
		parents[c.Hash] = c.Parents
		if opts.FirstParent && len(c.Parents) > 1 {
			parents[c.Hash] = c.Parents[:1]
		}
	}
	// Candidates are newest first, so a parent comes after its children:
	// ancestors are built from the oldest.
	m.anc, m.desc = make([]bitset, n), make([]bitset, n)
	for i := range m.cands {
		m.anc[i], m.desc[i] = newBitset(n), newBitset(n)
	}
	m.untestable = newBitset(n)
	m.chain = true
	for i := n - 1; i >= 0; i-- {
		m.anc[i].set(i)
		inRange := 0
		for _, p := range parents[m.cands[i]] {
			if j, ok := m.index[p]; ok {
				m.anc[i].or(m.anc[j])
				inRange++
				if j != i+1 {
					m.chain = false
				}
			}
		}
		if inRange > 1 || inRange == 0 && i != n-1 {
			m.chain = false
		}
	}
	for i := range m.cands {
		for j := range m.anc[i].each() {
			m.desc[j].set(i)
		}
	}
	return m, nil
}

// Candidates returns the commits that may be the first bad commit, in git
// rev-list order (newest first: the bad revision comes first).
func (m *Model) Candidates() []string { return slices.Clone(m.cands) }

// Observe adds a run of candidate commit (value: log of the metric). Runs of
// the good or bad revision go to ObserveReference; a commit outside the range
// is an error.
func (m *Model) Observe(commit string, value float64) error {
	return m.ObserveOn(0, commit, value)
}

// ObserveOn adds a run of candidate commit measured on host (0, 1, ...: the
// hosts of a session, each with a level of its own estimated from the
// references it measured; see ObserveReferenceOn). Errors as Observe's.
func (m *Model) ObserveOn(host int, commit string, value float64) error {
	i, ok := m.index[commit]
	if !ok {
		return fmt.Errorf("posterior: %.10s is not a candidate of the range", commit)
	}
	if i == 0 {
		m.bad = append(m.bad, obs{m.t, value, host})
	} else {
		m.runs[i] = append(m.runs[i], obs{m.t, value, host})
	}
	m.t++
	m.cache = nil
	return nil
}

// ObserveReference adds a run of the good revision (bad false) or of the bad
// one (bad true).
func (m *Model) ObserveReference(bad bool, value float64) {
	m.ObserveReferenceOn(0, bad, value)
}

// ObserveReferenceOn adds a run of the good revision (bad false) or of the
// bad one (bad true) measured on host. Runs are comparable only within a
// host: each host's level (its speed) is the median of its references'
// deviations from their side's level, and a host's candidate runs are no
// evidence until it has measured two references.
func (m *Model) ObserveReferenceOn(host int, bad bool, value float64) {
	if bad {
		m.bad = append(m.bad, obs{m.t, value, host})
	} else {
		m.good = append(m.good, obs{m.t, value, host})
	}
	m.t++
	m.cache = nil
}

// SetBuildEffect gives the spread sd (log scale, 0.01 = 1%) of a build's own
// level: each commit's runs sit at its side's level plus an offset of its
// build that every one of its runs shares (code layout), and so do the
// references' (the endpoints are builds too). A commit's evidence then
// never outgrows that spread, however many runs it has. 0 (the default):
// no such offset.
func (m *Model) SetBuildEffect(sd float64) {
	m.buildSD = max(sd, 0)
	m.cache = nil
}

// Levels is the levels the runs so far give (Posterior's, without its
// points).
func (m *Model) Levels() Levels { return m.compute().lv }

// Untestable marks a candidate that cannot be measured (it does not build, its
// server does not start): it is never proposed, and its posterior mass stays
// with the commits it cannot be told apart from.
func (m *Model) Untestable(commit string) {
	if i, ok := m.index[commit]; ok {
		m.untestable.set(i)
		m.cache = nil
	}
}

// Known marks a candidate good (bad false) or bad (bad true) with
// certainty, as a user does by hand: every hypothesis that puts it at another
// level loses its mass (a good commit sits at the good level, a bad one at
// the bad level; an intermediate level of a split is neither), its runs no
// longer count, and it is never proposed again. It returns an error for a
// commit outside the candidates (the good and the bad revision are not
// candidates to mark), and for a mark that leaves no hypothesis standing with
// the marks so far (a good commit that contains a bad one).
func (m *Model) Known(commit string, bad bool) error {
	i, ok := m.index[commit]
	if !ok || i == 0 {
		return fmt.Errorf("posterior: %.10s is not a candidate of the range (the bad revision cannot be marked)", commit)
	}
	for j, b := range m.known {
		if j == i {
			continue
		}
		// A bad commit contained by a good one, either way round.
		if b && !bad && m.anc[i].has(j) || !b && bad && m.anc[j].has(i) {
			return fmt.Errorf("posterior: %.10s %s contradicts %.10s marked %s", commit, word(bad), m.cands[j], word(b))
		}
	}
	m.known[i] = bad
	if m.untestable.has(i) {
		m.untestable.clear(i) // its level is known now
		m.agFor = -1
	}
	m.cache = nil
	return nil
}

// Forget takes back a Known mark of commit (a mark by hand replaced by a
// skip): its runs count again.
func (m *Model) Forget(commit string) {
	if i, ok := m.index[commit]; ok {
		if _, known := m.known[i]; known {
			delete(m.known, i)
			m.cache = nil
		}
	}
}

func word(bad bool) string {
	if bad {
		return "bad"
	}
	return "good"
}

// Levels are the estimated levels of the runs (natural logs of the metric):
// Good and Bad with the machine's drift taken out (the level at run t is
// Good + Drift(t)), Scale the noise of one run (the median absolute deviation
// scaled to a normal standard deviation), and the references each side.
type Levels struct {
	Good, Bad, Scale float64
	NGood, NBad      int
	// noise is the density of one run's deviation from its level, estimated
	// from the references (see noiseDensity).
	noise *density
	// Steps are the runs where the machine's speed stepped (another tenant,
	// a thermal limit), found in the references: the drift is smoothed on
	// each side of a step, never across it.
	Steps  []int
	gaps   [][2]int  // per step: the runs strictly between the references around it
	drift  []float64 // by run number: the machine's change since run 0
	weight []float64 // by run number: the references' kernel weight in the drift there (0: no smoothing)
	// host is each host's level relative to the others (log scale; nil
	// when one host measured every run), hostN its references, and
	// hostShift the bad level's change from the good one on it alone (NaN
	// without references of both sides there).
	host      []float64
	hostN     []int
	hostShift []float64
}

// off is host h's level (0 on one machine).
func (l Levels) off(h int) float64 {
	if h < len(l.host) {
		return l.host[h]
	}
	return 0
}

// Hosts is the number of hosts whose levels were estimated (0: one
// machine, no host levels).
func (l Levels) Hosts() int { return len(l.host) }

// HostLevel is host h's level relative to the hosts' average, relative
// (-0.1: its runs 10% lower), and its references.
func (l Levels) HostLevel(h int) (rel float64, refs int) {
	if h >= len(l.host) {
		return 0, 0
	}
	return math.Expm1(l.host[h]), l.hostN[h]
}

// HostShift is the bad level's change from the good one measured on host h
// alone, relative (NaN without references of both sides there): a
// regression whose size differs by host shows here.
func (l Levels) HostShift(h int) float64 {
	if h >= len(l.hostShift) {
		return math.NaN()
	}
	return math.Expm1(l.hostShift[h])
}

// unknownRun reports whether run r is no evidence: it fell in a step's gap,
// or its host has fewer than two references (its level is not known).
func (l Levels) unknownRun(r obs) bool {
	if len(l.host) > 0 && (r.h >= len(l.hostN) || l.hostN[r.h] < 2) {
		return true
	}
	return l.unknown(r.t)
}

// unknown reports whether run t fell between the references around a step:
// its level is not known (before or after the step), so it is not evidence.
func (l Levels) unknown(t int) bool {
	for _, g := range l.gaps {
		if t > g[0] && t < g[1] {
			return true
		}
	}
	return false
}

// levelVar is the variance of the estimated level at run r, in units of
// Scale squared: a median of the fewer side's references (1.57/n) and,
// when the drift is smoothed, the kernel's average at its time (1/weight).
// A host's level adds hostVar.
func (l Levels) levelVar(r obs) float64 {
	v := 1.57 / float64(max(min(l.NGood, l.NBad), 1))
	if t := r.t; t >= 0 && t < len(l.weight) && l.weight[t] > 0 {
		v += 1 / l.weight[t]
	}
	return v
}

// hostVar is the variance, in units of Scale squared, that the hosts'
// levels add to the mean of runs rs: each host's level is the median of
// its references (1.57/n), shared by its runs and independent of the
// other hosts', so a commit measured on several hosts averages them: the
// sum over hosts of (its share of rs)^2 x its level's variance.
func (l Levels) hostVar(rs []obs) float64 {
	if len(l.host) == 0 || len(rs) == 0 {
		return 0
	}
	per := map[int]int{}
	for _, r := range rs {
		per[r.h]++
	}
	var v float64
	for h, n := range per {
		share := float64(n) / float64(len(rs))
		v += share * share * 1.57 / float64(max(l.hostN[h], 1))
	}
	return v
}

// Shift is the bad level's change from the good one, relative (-0.05 = 5% lower).
func (l Levels) Shift() float64 { return math.Expm1(l.Bad - l.Good) }

// Effect is the shift in units of the noise of one run (|bad-good|/scale).
func (l Levels) Effect() float64 { return math.Abs(l.Bad-l.Good) / l.Scale }

// Drift is the machine's estimated change of level at run t since run 0 (log scale).
func (l Levels) Drift(t int) float64 {
	if t >= 0 && t < len(l.drift) {
		return l.drift[t]
	}
	return 0
}

// levels estimates the levels from the reference runs: medians each side,
// the drift as a Gaussian-kernel smooth of the references' residuals in run
// order (only when there are enough references to smooth: at least 12), and
// the scale as the pooled median absolute deviation of the residuals.
func (m *Model) levels() Levels {
	l := Levels{NGood: len(m.good), NBad: len(m.bad), drift: make([]float64, m.t)}
	if len(m.good) == 0 || len(m.bad) == 0 {
		l.Scale = math.NaN()
		l.noise = noiseDensity(nil, 1)
		return l
	}
	vals := func(xs []obs, drift []float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = x.v - drift[x.t] - l.off(x.h)
		}
		return out
	}
	refs := append(slices.Clone(m.good), m.bad...)
	order := timeOrder(refs)
	smooth := len(refs) >= 12
	hosts := m.hosts()
	for iter := 0; iter < 2; iter++ {
		l.Good, l.Bad = stats.Median(vals(m.good, l.drift)), stats.Median(vals(m.bad, l.drift))
		if hosts > 1 {
			m.hostLevels(&l, hosts)
			l.Good, l.Bad = stats.Median(vals(m.good, l.drift)), stats.Median(vals(m.bad, l.drift))
		}
		if !smooth {
			break
		}
		// Residuals of the references from their own level, before drift.
		res := make([]float64, len(refs))
		for i, x := range refs {
			lv := l.Good
			if i >= len(m.good) {
				lv = l.Bad
			}
			res[i] = x.v - lv - l.off(x.h)
		}
		sc := diffScale(refs, res, order)
		l.Steps, l.gaps = steps(refs, res, sc, order)
		l.drift, l.weight = smoothDrift(refs, res, sc, m.t, l.Steps, order)
		// The drift is relative to run 0's level: anchor at the mean so that
		// the levels stay the medians of the references.
		mean := 0.0
		for _, x := range refs {
			mean += l.drift[x.t]
		}
		mean /= float64(len(refs))
		for t := range l.drift {
			l.drift[t] -= mean
		}
	}
	var res []float64
	for _, x := range m.good {
		res = append(res, x.v-l.drift[x.t]-l.off(x.h)-l.Good)
	}
	for _, x := range m.bad {
		res = append(res, x.v-l.drift[x.t]-l.off(x.h)-l.Bad)
	}
	l.Scale = 1.4826 * mad(res)
	// Few references: the MAD of a handful underestimates; never below a
	// tenth of the shift or 0.1% (identical runs would make any gap decisive).
	n := float64(len(res))
	l.Scale *= 1 + 1/n
	l.Scale = math.Max(l.Scale, math.Max(math.Abs(l.Bad-l.Good)/10, 0.001))
	l.noise = noiseDensity(res, l.Scale)
	return l
}

// hosts is the number of hosts that measured runs (the highest host + 1).
func (m *Model) hosts() int {
	n := 1
	for _, xs := range [][]obs{m.good, m.bad} {
		for _, x := range xs {
			n = max(n, x.h+1)
		}
	}
	for _, xs := range m.runs {
		for _, x := range xs {
			n = max(n, x.h+1)
		}
	}
	return n
}

// hostLevels sets l's host levels from the references at l's side levels
// and drift: each host's the median of its references' deviations, the
// whole centred on the references' mean (so the side levels stay the
// references' medians), and each host's own shift between the sides.
func (m *Model) hostLevels(l *Levels, hosts int) {
	dev := make([][]float64, hosts)
	side := make([][2][]float64, hosts)
	for k, xs := range [][]obs{m.good, m.bad} {
		lv := []float64{l.Good, l.Bad}[k]
		for _, x := range xs {
			d := x.v - l.drift[x.t]
			dev[x.h] = append(dev[x.h], d-lv)
			side[x.h][k] = append(side[x.h][k], d)
		}
	}
	l.host, l.hostN, l.hostShift = make([]float64, hosts), make([]int, hosts), make([]float64, hosts)
	var sum float64
	var n int
	for h := range hosts {
		l.hostN[h] = len(dev[h])
		l.hostShift[h] = math.NaN()
		if len(side[h][0]) > 0 && len(side[h][1]) > 0 {
			l.hostShift[h] = stats.Median(side[h][1]) - stats.Median(side[h][0])
		}
		if len(dev[h]) == 0 {
			continue
		}
		l.host[h] = stats.Median(dev[h])
		sum += l.host[h] * float64(len(dev[h]))
		n += len(dev[h])
	}
	for h := range hosts {
		if l.hostN[h] > 0 {
			l.host[h] -= sum / float64(n)
		}
	}
}

// density is a run's noise density: the references' residuals and scale,
// and its log on a grid per widening (see at), made when first asked for.
type density struct {
	res   []float64
	scale float64 // of the Student-t part
	wT    float64 // weight of the Student-t part
	grids map[float64]*grid
}

// grid is log f at lo, lo+step, ... for one widening.
type grid struct {
	lo, step float64
	logf     []float64
	infl     float64
}

// Noise density grids: 121 points over +-12 scales of the widening.
const (
	densityHalfWidth = 12.0
	densityPoints    = 121
)

// widenings are the spreads a run's density is made for, relative to the
// references': a commit's runs use the first at least as wide as they need.
var widenings = []float64{1, 1.1, 1.25, 1.5, 1.75, 2, 2.5, 3, 4, 6}

// tConst is the normalising constant of the Student-t density with Nu = 4
// degrees of freedom: Gamma(5/2) / (sqrt(4 pi) Gamma(2)).
const tConst = 0.375

// noiseDensity estimates the noise of one run from the references'
// residuals: a mixture of their kernel density (Gaussian kernel, Silverman's
// bandwidth 0.9 scale n^-1/5) and a Student-t of the scale, the kernel's
// weight n/(n+20) of 0.9 (so that with few references the t carries it, and
// where the references put no run the t's tails still do). The references
// show the noise's shape, a bimodal one included (a fifth of the runs 15%
// slow after a restart): runs are then judged against the shape the good and
// the bad revision really have, not a bell.
func noiseDensity(res []float64, scale float64) *density {
	n := float64(len(res))
	return &density{res: res, scale: scale, wT: 1 - 0.9*n/(n+20), grids: map[float64]*grid{}}
}

// make builds the grid of a widening w: the density convolved with a normal
// of variance (w^2-1) scale^2 (the kernel's bandwidth and the t's scale
// widened to match), which keeps the shape's modes where they are.
func (d *density) grid(w float64) *grid {
	if g, ok := d.grids[w]; ok {
		return g
	}
	g := &grid{lo: -densityHalfWidth * w * d.scale, step: 2 * densityHalfWidth * w * d.scale / (densityPoints - 1), infl: w,
		logf: make([]float64, densityPoints)}
	f := make([]float64, densityPoints)
	n := float64(len(d.res))
	ts := d.scale * w
	if n > 0 {
		h0 := 0.9 * d.scale * math.Pow(n, -0.2)
		h := math.Sqrt(h0*h0 + (w*w-1)*d.scale*d.scale)
		norm := (1 - d.wT) / (n * h * math.Sqrt(2*math.Pi))
		// exp(-z^2/2) along the grid by its recurrence: with z_k = z0 + k
		// dz, e_{k+1} = e_k a_k and a_{k+1} = a_k exp(-dz^2): two
		// exponentials per residual instead of one per grid point (they were
		// 40% of a session's computing).
		dz := g.step / h
		c := math.Exp(-dz * dz)
		for _, r := range d.res {
			k0 := max(int(math.Ceil((r-4*h-g.lo)/g.step)), 0)
			k1 := min(int(math.Floor((r+4*h-g.lo)/g.step)), densityPoints-1)
			if k0 > k1 {
				continue
			}
			z0 := (g.lo + float64(k0)*g.step - r) / h
			e := math.Exp(-z0 * z0 / 2)
			a := math.Exp(-z0*dz - dz*dz/2)
			for k := k0; k <= k1; k++ {
				f[k] += norm * e
				e *= a
				a *= c
			}
		}
	}
	for k := range f {
		// The grid's points are the same multiples of ts at every widening:
		// the t density's shape there is a table (tGrid).
		g.logf[k] = math.Log(f[k] + d.wT*tGrid[k]/ts)
	}
	d.grids[w] = g
	return g
}

// tGrid is the Student-t density of scale 1 at the density grids' points in
// units of their scale: z = -densityHalfWidth ... +densityHalfWidth.
var tGrid = func() []float64 {
	out := make([]float64, densityPoints)
	for k := range out {
		z := -densityHalfWidth + float64(k)*2*densityHalfWidth/(densityPoints-1)
		out[k] = tDensity(z, 1)
	}
	return out
}()

// tDensity is the Student-t density (Nu degrees of freedom, scale s) at r.
func tDensity(r, s float64) float64 {
	z := r / s
	return tConst / s * math.Pow(1+z*z/Nu, -(Nu+1)/2.0)
}

// widening returns the first of widenings at least infl.
func widening(infl float64) float64 {
	for _, w := range widenings {
		if w >= infl-1e-9 {
			return w
		}
	}
	return widenings[len(widenings)-1]
}

// at is the log density of a deviation r when the runs' spread is infl
// times the references' (the level's own error widens it; see compute).
func (d *density) at(r, infl float64) float64 {
	g := d.grid(widening(infl))
	pos := (r - g.lo) / g.step
	k := int(math.Floor(pos))
	if k < 0 || k >= len(g.logf)-1 {
		return math.Log(d.wT * tDensity(r, d.scale*g.infl))
	}
	f := pos - float64(k)
	return g.logf[k]*(1-f) + g.logf[k+1]*f
}

// driftStep is the spacing, in runs, of the points where the drift is
// smoothed; between them it is interpolated linearly (the kernel is four
// times wider, so nothing is lost).
const driftStep = 4

// smoothDrift is the Gaussian-kernel smooth (bandwidth DriftBandwidth, cut
// at three bandwidths) of the references' residuals res (refs[i]'s, in any
// order; order is their run order, timeOrder) at every run 0..t-1, with
// Huber weights beyond 2 scale so that a hiccup does not move it, and the
// kernel's total weight there. The kernel does not cross the steps (run
// numbers, increasing).
func smoothDrift(refs []obs, res []float64, scale float64, t int, steps []int, order []int) (drift, weight []float64) {
	drift, weight = make([]float64, t), make([]float64, t)
	bounds := append(append([]int{0}, steps...), t)
	for s := 0; s+1 < len(bounds); s++ {
		t0, t1 := bounds[s], bounds[s+1]
		var sr []obs
		var sres []float64
		for _, i := range order {
			if x := refs[i]; x.t >= t0 && x.t < t1 {
				sr = append(sr, x)
				sres = append(sres, res[i])
			}
		}
		smoothSegment(sr, sres, scale, t0, t1, drift, weight)
	}
	return drift, weight
}

// smoothSegment fills drift and weight for runs t0..t1-1 from the references
// of that stretch, in run order.
func smoothSegment(refs []obs, res []float64, scale float64, t0, t1 int, drift, weight []float64) {
	if t1 <= t0 || len(refs) == 0 {
		return
	}
	order := make([]int, len(refs)) // refs are in run order already
	for i := range order {
		order[i] = i
	}
	const cut = 3 * DriftBandwidth
	var gridT []int
	for x := t0; x < t1; x += driftStep {
		gridT = append(gridT, x)
	}
	if gridT[len(gridT)-1] != t1-1 {
		gridT = append(gridT, t1-1)
	}
	gd, gw := make([]float64, len(gridT)), make([]float64, len(gridT))
	lo := 0
	for g, x := range gridT {
		for lo < len(order) && float64(x-refs[order[lo]].t) > cut {
			lo++
		}
		var w, sum float64
		for k := lo; k < len(order); k++ {
			i := order[k]
			dt := refs[i].t - x
			if float64(dt)/DriftBandwidth > 3 {
				break
			}
			kw := driftKernel(dt)
			if scale > 0 && math.Abs(res[i]) > 2*scale {
				kw *= 2 * scale / math.Abs(res[i])
			}
			w += kw
			sum += kw * res[i]
		}
		if w > 0 {
			gd[g] = sum / w
		}
		gw[g] = w
	}
	if len(gridT) == 1 {
		drift[gridT[0]], weight[gridT[0]] = gd[0], gw[0]
		return
	}
	for g := 0; g+1 < len(gridT); g++ {
		a, b := gridT[g], gridT[g+1]
		for x := a; x <= b; x++ {
			f := float64(x-a) / float64(b-a)
			drift[x] = gd[g]*(1-f) + gd[g+1]*f
			weight[x] = gw[g]*(1-f) + gw[g+1]*f
		}
	}
}

// driftKernelTable holds exp(-d^2/2) for d = dt/DriftBandwidth at the run
// distances dt the drift kernel reaches (|dt| <= 3 bandwidths): the smooth
// runs after every run, and the exponentials were a quarter of a session's
// computing.
var driftKernelTable = func() []float64 {
	n := int(3 * DriftBandwidth)
	out := make([]float64, n+1)
	for dt := range out {
		d := float64(dt) / DriftBandwidth
		out[dt] = math.Exp(-d * d / 2)
	}
	return out
}()

// driftKernel is the Gaussian kernel's weight at a distance of dt runs (0
// beyond the table: further than 3 bandwidths).
func driftKernel(dt int) float64 {
	if dt < 0 {
		dt = -dt
	}
	if dt >= len(driftKernelTable) {
		return 0
	}
	return driftKernelTable[dt]
}

// diffScale is a scale of the references' noise that a step or a drift does
// not inflate: the median absolute difference of residuals neighbouring in
// run order (order: timeOrder), over sqrt 2, scaled to a normal standard
// deviation.
func diffScale(refs []obs, res []float64, order []int) float64 {
	var d []float64
	for k := 1; k < len(order); k++ {
		d = append(d, math.Abs(res[order[k]]-res[order[k-1]]))
	}
	if len(d) == 0 {
		return 0
	}
	return 1.4826 * stats.Median(d) / math.Sqrt2 // |a-b| of two normals has median 0.6745*sqrt(2)*sigma
}

// Step detection: a stretch of at least stepMinRefs references on each side
// whose mean residuals (clipped at 2 scale) differ by more than stepZ
// standard errors is a step; binary segmentation finds up to maxSteps.
const (
	stepMinRefs = 6
	stepZ       = 4.5
	maxSteps    = 4
)

// steps returns the run numbers where the references' level stepped,
// increasing, and for each the runs between the last reference before it
// and the first after (exclusive), whose level is not known: the step may
// have come anywhere there. order is refs' run order (timeOrder).
func steps(refs []obs, res []float64, scale float64, order []int) (cuts []int, gaps [][2]int) {
	if scale <= 0 || len(refs) < 2*stepMinRefs {
		return nil, nil
	}
	y := make([]float64, len(order))
	for k, i := range order {
		y[k] = math.Max(-2*scale, math.Min(2*scale, res[i]))
	}
	prefix := make([]float64, len(y)+1)
	for k, v := range y {
		prefix[k+1] = prefix[k] + v
	}
	var split func(a, b int)
	split = func(a, b int) {
		if b-a < 2*stepMinRefs || len(cuts) >= maxSteps {
			return
		}
		best, bestZ := -1, stepZ
		for k := a + stepMinRefs; k <= b-stepMinRefs; k++ {
			n1, n2 := float64(k-a), float64(b-k)
			m1 := (prefix[k] - prefix[a]) / n1
			m2 := (prefix[b] - prefix[k]) / n2
			z := math.Abs(m1-m2) / (scale * math.Sqrt(1/n1+1/n2))
			if z > bestZ {
				best, bestZ = k, z
			}
		}
		if best < 0 {
			return
		}
		cuts = append(cuts, refs[order[best]].t)
		// The cut's place is an estimate: the runs from two references
		// before it to one after it may be on either side.
		gaps = append(gaps, [2]int{refs[order[max(best-2, 0)]].t, refs[order[min(best+1, len(order)-1)]].t})
		split(a, best)
		split(best, b)
	}
	split(0, len(y))
	slices.Sort(cuts)
	return cuts, gaps
}

// timeOrder returns the indexes of refs in run order (their t, unique per
// run), which the drift, the step detection and the difference scale walk.
func timeOrder(refs []obs) []int {
	order := make([]int, len(refs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return refs[a].t - refs[b].t })
	return order
}

func mad(xs []float64) float64 {
	md := stats.Median(xs)
	d := make([]float64, len(xs))
	for i, x := range xs {
		d[i] = math.Abs(x - md)
	}
	return stats.Median(d)
}

// bitset is a set of candidate positions.
type bitset []uint64

func newBitset(n int) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) set(i int)      { b[i/64] |= 1 << (i % 64) }
func (b bitset) clear(i int)    { b[i/64] &^= 1 << (i % 64) }
func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b bitset) or(c bitset) {
	for k := range b {
		b[k] |= c[k]
	}
}
func (b bitset) andCount(c bitset) int {
	n := 0
	for k := range b {
		n += bits.OnesCount64(b[k] & c[k])
	}
	return n
}
func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// each yields the positions in the set, in increasing order.
func (b bitset) each() func(func(int) bool) {
	return func(yield func(int) bool) {
		for k, w := range b {
			for w != 0 {
				i := bits.TrailingZeros64(w)
				if !yield(k*64 + i) {
					return
				}
				w &= w - 1
			}
		}
	}
}
