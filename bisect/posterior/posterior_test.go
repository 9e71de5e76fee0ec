package posterior

import (
	"fmt"
	"go/build"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/bisect"
)

// chain is a line of n commits after a root: hashes[0] is good, hashes[n] bad.
func chain(n int) ([]bisect.Commit, []string) {
	var cs []bisect.Commit
	hs := []string{fmt.Sprintf("%040d", 0)}
	for i := 1; i <= n; i++ {
		h := fmt.Sprintf("%040d", i)
		cs = append(cs, bisect.Commit{Hash: h, Parents: []string{hs[i-1]}})
		hs = append(hs, h)
	}
	return cs, hs
}

// feed gives the model runs of the references and of the commits in
// measured, at the levels the culprit culprit (a position) gives them, with
// normal noise of sd sigma on a shift of -shift.
func feed(m *Model, hs []string, culprit int, shift, sigma float64, refs int, measured map[int]int, r *rand.Rand) {
	for i := 0; i < refs; i++ {
		m.ObserveReference(false, r.NormFloat64()*sigma)
		m.ObserveReference(true, -shift+r.NormFloat64()*sigma)
	}
	var order []int
	for pos := range measured {
		order = append(order, pos)
	}
	slices.Sort(order) // the runs in one order, so the test's data do not depend on map order
	for _, pos := range order {
		n := measured[pos]
		lvl := 0.0
		if pos >= culprit {
			lvl = -shift
		}
		for k := 0; k < n; k++ {
			if err := m.Observe(hs[pos], lvl+r.NormFloat64()*sigma); err != nil {
				panic(err)
			}
		}
	}
}

func TestPosteriorIsAProbabilityAndFindsTheCulprit(t *testing.T) {
	cs, hs := chain(20)
	m, err := New(cs, hs[0], hs[20], bisect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Before any run: uniform over the 20 candidates (less the prior of
	// "no culprit"), P(bad) rising towards bad.
	pts, _, pNone, _ := m.Posterior()
	sum := pNone
	for _, p := range pts {
		sum += p.First
	}
	if math.Abs(sum-1) > 1e-9 || math.Abs(pts[10].First-pts[3].First) > 1e-12 || !(pts[0].Bad > pts[10].Bad) {
		t.Fatalf("prior: sum %v, first %v %v, bad %v %v", sum, pts[10].First, pts[3].First, pts[0].Bad, pts[10].Bad)
	}
	feed(m, hs, 13, 0.05, 0.01, 8, map[int]int{5: 4, 10: 4, 12: 4, 13: 4, 16: 4}, rand.New(rand.NewPCG(1, 1)))
	pts, lv, pNone, pSplit := m.Posterior()
	sum = pNone
	for _, p := range pts {
		sum += p.First
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("posterior sums to %v", sum)
	}
	if math.Abs(lv.Shift()-(math.Exp(-0.05)-1)) > 0.02 || lv.Scale > 0.02 {
		t.Errorf("levels: shift %v scale %v", lv.Shift(), lv.Scale)
	}
	ans := m.Answer(0.99)
	if !ans.Done || len(ans.Commits) != 1 || ans.Commits[0] != hs[13] {
		t.Fatalf("answer %+v (none %.3g split %.3g)", ans, pNone, pSplit)
	}
	// Position of the culprit near 1, of its measured parent near 0.
	byHash := map[string]Point{}
	for _, p := range pts {
		byHash[p.Commit] = p
	}
	if p := byHash[hs[13]]; p.Runs != 4 || !(p.Lo < 1 && p.Hi > 1) || p.Bad < 0.99 {
		t.Errorf("culprit: %+v", p)
	}
	if p := byHash[hs[12]]; !(p.Lo < 0 && p.Hi > 0) || p.Bad > 0.01 {
		t.Errorf("culprit's parent: %+v", p)
	}
}

// TestNextIsThePosteriorMedianAndPrefersBuiltCommits: with nothing measured
// the next commit halves the range (Horstein's rule); a built commit near the
// median wins over an unbuilt one at it when builds are dear, not when they
// are free.
func TestNextIsThePosteriorMedianAndPrefersBuiltCommits(t *testing.T) {
	cs, hs := chain(40)
	m, _ := New(cs, hs[0], hs[40], bisect.Options{})
	feed(m, hs, 24, 0.05, 0.02, 6, nil, rand.New(rand.NewPCG(2, 2)))
	h, ok := m.Next(Cost{})
	if !ok || h != hs[20] && h != hs[21] {
		t.Fatalf("next %v %v, want the middle commit 20 or 21", h, ok)
	}
	built := func(x string) bool { return x == hs[17] }
	if h, _ := m.Next(Cost{Built: built, BuildRuns: 50}); h != hs[17] {
		t.Errorf("dear builds: next %.3s, want the built 17", h[37:])
	}
	if h, _ := m.Next(Cost{Built: built, BuildRuns: 0}); h == hs[17] {
		t.Errorf("free builds: next is the built 17, want the median")
	}
	// Two per round: near the thirds.
	pts := m.NextK(2, Cost{})
	if len(pts) != 2 || pts[0] == pts[1] {
		t.Fatalf("NextK(2) = %v", pts)
	}
	for i, want := range []int{14, 27} { // P(bad) at 1/3, at 2/3
		got := 0
		fmt.Sscanf(pts[i], "%d", &got)
		if math.Abs(float64(got-want)) > 2 {
			t.Errorf("NextK(2)[%d] = %d, want about %d", i, got, want)
		}
	}
}

// TestUntestableParentMakesARange: when the culprit's parent cannot be
// measured, no data tells the two apart: the answer is the pair.
func TestUntestableParentMakesARange(t *testing.T) {
	cs, hs := chain(20)
	m, _ := New(cs, hs[0], hs[20], bisect.Options{})
	m.Untestable(hs[12])
	feed(m, hs, 13, 0.05, 0.01, 8, map[int]int{5: 4, 10: 4, 11: 4, 13: 4, 16: 4}, rand.New(rand.NewPCG(3, 3)))
	ans := m.Answer(0.99)
	if !ans.Done || strings.Join(ans.Commits, ",") != hs[13]+","+hs[12] {
		t.Fatalf("answer %+v, want the culprit and its untestable parent", ans)
	}
	for _, h := range m.NextK(3, Cost{}) {
		if h == hs[12] {
			t.Errorf("the untestable commit was proposed")
		}
	}
}

// TestSplitChangeNamesTheFirstCommit: two commits each carrying part of the
// change: the first bad commit is the first one on the path from good, and
// the posterior says the change is split.
func TestSplitChangeNamesTheFirstCommit(t *testing.T) {
	cs, hs := chain(20)
	m, _ := New(cs, hs[0], hs[20], bisect.Options{})
	r := rand.New(rand.NewPCG(4, 4))
	for i := 0; i < 10; i++ {
		m.ObserveReference(false, r.NormFloat64()*0.01)
		m.ObserveReference(true, -0.10+r.NormFloat64()*0.01)
	}
	for _, x := range []struct {
		pos int
		lvl float64
	}{{4, 0}, {5, -0.04}, {8, -0.04}, {12, -0.04}, {13, -0.10}, {16, -0.10}} {
		for k := 0; k < 6; k++ {
			m.Observe(hs[x.pos], x.lvl+r.NormFloat64()*0.01)
		}
	}
	ans := m.Answer(0.99)
	_, _, _, pSplit := m.Posterior()
	if !ans.Done || ans.Commits[0] != hs[5] || pSplit < 0.99 {
		t.Fatalf("answer %+v, P(split) %.3g: want commit 5, split", ans, pSplit)
	}
}

// TestMergeHistory: on a history with a side branch, a culprit on the branch
// makes the merge and its descendants bad, not the first-parent commits
// beside it; P(bad) of a commit sums over its ancestors.
func TestMergeHistory(t *testing.T) {
	h := func(i int) string { return fmt.Sprintf("%040d", i) }
	// 0 - 1 - 2 - 3 - 6(merge of 3 and 5) - 7
	//      \- 4 - 5 -/
	cs := []bisect.Commit{
		{Hash: h(1), Parents: []string{h(0)}}, {Hash: h(2), Parents: []string{h(1)}}, {Hash: h(3), Parents: []string{h(2)}},
		{Hash: h(4), Parents: []string{h(1)}}, {Hash: h(5), Parents: []string{h(4)}},
		{Hash: h(6), Parents: []string{h(3), h(5)}}, {Hash: h(7), Parents: []string{h(6)}},
	}
	m, err := New(cs, h(0), h(7), bisect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.chain {
		t.Fatal("a merge history taken for a chain")
	}
	r := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < 8; i++ {
		m.ObserveReference(false, r.NormFloat64()*0.01)
		m.ObserveReference(true, -0.2+r.NormFloat64()*0.01)
	}
	levels := []float64{1: 0, 2: 0, 3: 0, 4: 0, 5: -0.2, 6: -0.2} // culprit 5, on the branch
	for pos := 1; pos <= 6; pos++ {
		for k := 0; k < 3; k++ {
			m.Observe(h(pos), levels[pos]+r.NormFloat64()*0.01)
		}
	}
	ans := m.Answer(0.99)
	if !ans.Done || ans.Commits[0] != h(5) {
		t.Fatalf("answer %+v, want the branch commit 5", ans)
	}
	pts, _, _, _ := m.Posterior()
	for _, p := range pts {
		var first float64
		for _, q := range pts {
			if m.anc[m.index[p.Commit]].has(m.index[q.Commit]) {
				first += q.First
			}
		}
		if math.Abs(first-p.Bad) > 1e-9 {
			t.Errorf("%.3s: P(bad) %v, sum over its ancestors %v", p.Commit[37:], p.Bad, first)
		}
	}
	// First-parent mode: the merge stands for its branch.
	fp, _ := New(cs, h(0), h(7), bisect.Options{FirstParent: true})
	if got := len(fp.Candidates()); got != 5 {
		t.Errorf("first-parent candidates %d, want 5 (7 6 3 2 1)", got)
	}
}

// TestTheSearchDoesNotImportTheSimulator: the search sees runs only through
// what the session gives it.
func TestTheSearchDoesNotImportTheSimulator(t *testing.T) {
	for _, dir := range []string{".", "../session"} {
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range p.Imports {
			if strings.HasSuffix(imp, "/bisect/simmeasure") || strings.HasSuffix(imp, "/bisect/simulate") {
				t.Errorf("%s imports %s", p.ImportPath, imp)
			}
		}
	}
}

func TestBinaryInformation(t *testing.T) {
	// Small effects: about effect^2/8 nats; large: ln 2.
	if got := Information(0.1); math.Abs(got-0.01/8)/(0.01/8) > 0.05 {
		t.Errorf("I(0.1) = %v, want about %v", got, 0.01/8)
	}
	if got := Information(12); math.Abs(got-math.Ln2) > 1e-3 {
		t.Errorf("I(12) = %v, want ln 2", got)
	}
	if !(binaryInfo(0.3, 2) < binaryInfo(0.5, 2)) {
		t.Error("information is not largest at one half")
	}
}

// TestKnownMarksAreCertain: commits marked by hand bound the first bad
// commit with certainty, before any run and against runs that say
// otherwise; they are never proposed, and a contradicting mark is refused.
func TestKnownMarksAreCertain(t *testing.T) {
	cs, hs := chain(20)
	m, _ := New(cs, hs[0], hs[20], bisect.Options{})
	if err := m.Known(hs[5], false); err != nil {
		t.Fatal(err)
	}
	if err := m.Known(hs[9], true); err != nil {
		t.Fatal(err)
	}
	outside := func(pts []Point, pNone float64) {
		t.Helper()
		if pNone != 0 {
			t.Errorf("P(no culprit) %v with a commit marked bad", pNone)
		}
		for i, p := range pts {
			pos := 20 - i
			if (pos <= 5 || pos > 9) && p.First != 0 {
				t.Errorf("commit %d outside the marks (5, 9] has P(first) %v", pos, p.First)
			}
		}
		if p := pts[20-9]; math.Abs(p.Bad-1) > 1e-12 {
			t.Errorf("the commit marked bad has P(bad) %v", p.Bad)
		}
		if p := pts[20-5]; p.Bad != 0 {
			t.Errorf("the commit marked good has P(bad) %v", p.Bad)
		}
	}
	// Before any run: the prior inside the marks, evenly.
	pts, _, pNone, _ := m.Posterior()
	outside(pts, pNone)
	if math.Abs(pts[20-6].First-pts[20-8].First) > 1e-12 || pts[20-6].First < 0.2 {
		t.Errorf("prior inside the marks: %v %v", pts[20-6].First, pts[20-8].First)
	}
	// Runs put the culprit at 13 and the marked commits on the other side
	// of their marks: the marks win, the answer is inside them.
	feed(m, hs, 13, 0.05, 0.01, 8, map[int]int{5: 6, 7: 4, 8: 4, 9: 6, 16: 4}, rand.New(rand.NewPCG(7, 7)))
	pts, _, pNone, _ = m.Posterior()
	outside(pts, pNone)
	ans := m.Answer(0.99)
	if len(ans.Commits) == 0 || ans.Commits[0] != hs[9] {
		t.Errorf("answer %+v, want commit 9 (marked bad; its parent 8 measures good)", ans)
	}
	for _, h := range m.NextK(4, Cost{}) {
		if h == hs[5] || h == hs[9] {
			t.Errorf("a commit marked by hand was proposed: %.3s", h[37:])
		}
	}
	// Contradictions: good on a descendant of a bad mark, bad on an
	// ancestor of a good one; the endpoints are not candidates to mark.
	if err := m.Known(hs[12], false); err == nil {
		t.Errorf("good on 12 above bad 9 was taken")
	}
	if err := m.Known(hs[3], true); err == nil {
		t.Errorf("bad on 3 below good 5 was taken")
	}
	if err := m.Known(hs[20], true); err == nil {
		t.Errorf("the bad revision was marked")
	}
	if err := m.Known(hs[0], false); err == nil {
		t.Errorf("the good revision was marked")
	}
	// Marking the same commit again with the other word replaces the mark
	// when no other mark forbids it.
	if err := m.Known(hs[7], true); err != nil {
		t.Fatal(err)
	}
	if err := m.Known(hs[7], false); err != nil {
		t.Errorf("re-marking 7 good: %v", err)
	}
}

// With a build's own level, a commit's evidence is bounded by its spread:
// forty runs of the culprit and forty of its parent name it with certainty
// without one, and with a spread of half the shift they cannot.
func TestBuildEffectBoundsACommitsEvidence(t *testing.T) {
	cs, hs := chain(8)
	first := func(sd float64) float64 {
		m, err := New(cs, hs[0], hs[8], bisect.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m.SetBuildEffect(sd)
		feed(m, hs, 4, 0.05, 0.015, 40, map[int]int{3: 40, 4: 40}, rand.New(rand.NewPCG(7, 8)))
		for _, p := range must(m.Posterior()) {
			if p.Commit == hs[4] {
				return p.First
			}
		}
		return 0
	}
	without, with := first(0), first(0.025)
	if without < 0.995 || with > 0.99 {
		t.Errorf("P(first bad commit) of the culprit: %.4f without a build effect, %.4f with a spread of 2.5%%: want at least 0.995, then at most 0.99", without, with)
	}
}

func must(points []Point, _ Levels, _, _ float64) []Point { return points }

// TestHostLevels: two hosts, the second 25% slower, the culprit -10% at 2%
// noise. The commits below the culprit measured on the slow host are good
// on its level; read as one machine's runs they look bad, and the answer
// moves below the culprit.
func TestHostLevels(t *testing.T) {
	cs, hs := chain(10)
	const culprit, shift, sigma, slow = 6, 0.10, 0.02, -0.25
	run := func(hosts bool) (*Model, Answer) {
		m, err := New(cs, hs[0], hs[10], bisect.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(7, 8))
		on := func(h int) int {
			if hosts {
				return h
			}
			return 0
		}
		for i := 0; i < 4; i++ {
			for h, lvl := range []float64{0, slow} {
				m.ObserveReferenceOn(on(h), false, lvl+r.NormFloat64()*sigma)
				m.ObserveReferenceOn(on(h), true, lvl-shift+r.NormFloat64()*sigma)
			}
		}
		for _, c := range []struct{ pos, host int }{{3, 1}, {5, 1}, {6, 0}, {8, 0}} {
			lvl := []float64{0, slow}[c.host]
			if c.pos >= culprit {
				lvl -= shift
			}
			for k := 0; k < 3; k++ {
				if err := m.ObserveOn(on(c.host), hs[c.pos], lvl+r.NormFloat64()*sigma); err != nil {
					t.Fatal(err)
				}
			}
		}
		return m, m.Answer(0.95)
	}
	m, a := run(true)
	if !a.Done || len(a.Commits) != 1 || a.Commits[0] != hs[culprit] {
		t.Errorf("with host levels: %+v, want %.6s", a, hs[culprit])
	}
	_, lv, _, _ := m.Posterior()
	if lv.Hosts() != 2 {
		t.Fatalf("%d host levels, want 2", lv.Hosts())
	}
	if rel, refs := lv.HostLevel(1); math.Abs(math.Log1p(rel)-slow/2) > 0.02 || refs != 8 {
		// The levels are centred: host 1 sits half the gap below the mean.
		t.Errorf("host 1's level %.3f over %d references, want about %.3f over 8", rel, refs, math.Expm1(slow/2))
	}
	for h := range 2 {
		if s := lv.HostShift(h); math.Abs(s-math.Expm1(-shift)) > 0.03 {
			t.Errorf("host %d's own shift %.3f, want about %.3f", h, s, math.Expm1(-shift))
		}
	}
	if _, a := run(false); a.Done && len(a.Commits) == 1 && a.Commits[0] == hs[culprit] {
		t.Errorf("read as one machine's runs, the slow host's good commits should look bad: %+v", a)
	}
}
