package scan

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/simmeasure"
	"github.com/perfbisect/perfbisect/stats"
)

// Two regressions in a simulated history of 60 commits, scanned every 3rd
// commit with 4 runs each: both are found, each as a pair of measured
// neighbours that brackets its culprit, for 20 seeds out of 20; a history
// without a change gives no pair.
func TestScanFindsBothRegressions(t *testing.T) {
	cs, hs := simmeasure.Chain(60)
	line, err := FirstParentLine(cs, hs[0], hs[60])
	if err != nil || len(line) != 61 {
		t.Fatalf("line: %d commits, %v", len(line), err)
	}
	picked := Pick(line, 3, false)
	if len(picked) != 21 || picked[0].Hash != hs[0] || picked[20].Hash != hs[60] {
		t.Fatalf("picked %d commits", len(picked))
	}
	var points []string
	for _, c := range picked {
		points = append(points, c.Hash)
	}
	pos := map[string]int{}
	for i, h := range hs {
		pos[h] = i
	}
	found := 0
	for seed := uint64(1); seed <= 20; seed++ {
		m := &simmeasure.Measurer{Commits: cs, Base: 1000, CV: 0.02, Culprits: map[string]float64{hs[20]: 0.85, hs[44]: 0.90},
			Untestable: map[string]string{hs[30]: "build failed"}, Rand: rand.New(rand.NewPCG(seed, 9))}
		res, err := Scan(context.Background(), m, points, 4, session.TPS, stats.ChangePointOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ok := 0
		for _, c := range res.Changes {
			for _, culprit := range []int{20, 44} {
				if pos[c.Good] < culprit && culprit <= pos[c.Bad] && c.Regression && c.RelChange < -0.05 {
					ok++
				}
			}
		}
		if ok == 2 && len(res.Changes) == 2 {
			found++
		} else {
			t.Logf("seed %d: %+v", seed, res.Changes)
		}
		if res.Points[10].Skip == "" { // hs[30] is the 11th picked commit
			t.Errorf("the broken commit was measured")
		}
	}
	if found < 19 {
		t.Errorf("both regressions bracketed in %d of 20 scans", found)
	}
	m := &simmeasure.Measurer{Commits: cs, Base: 1000, CV: 0.02, Rand: rand.New(rand.NewPCG(1, 1))}
	res, err := Scan(context.Background(), m, points, 4, session.TPS, stats.ChangePointOptions{})
	if err != nil || len(res.Changes) != 0 {
		t.Errorf("no change: %v %+v", err, res.Changes)
	}
	// Latency: the same shifts read in the other direction are still regressions.
	m = &simmeasure.Measurer{Commits: cs, Base: 1000, CV: 0.02, Culprits: map[string]float64{hs[20]: 0.8}, Rand: rand.New(rand.NewPCG(2, 2))}
	res, err = Scan(context.Background(), m, points, 4, session.P95, stats.ChangePointOptions{})
	if err != nil || len(res.Changes) != 1 || !res.Changes[0].Regression || res.Changes[0].RelChange <= 0 {
		t.Errorf("p95: %v %+v", err, res.Changes)
	}
}

func TestFirstParentLineAndPick(t *testing.T) {
	// 0 - 1 - 2 - M(3) - 4 ; side branch s1 off 1, merged at M.
	h := func(s string) string { return fmt.Sprintf("%040s", s) }
	cs := []bisect.Commit{
		{Hash: h("1"), Parents: []string{h("0")}}, {Hash: h("2"), Parents: []string{h("1")}},
		{Hash: h("s1"), Parents: []string{h("1")}}, {Hash: h("3"), Parents: []string{h("2"), h("s1")}},
		{Hash: h("4"), Parents: []string{h("3")}},
	}
	line, err := FirstParentLine(cs, h("0"), h("4"))
	if err != nil || len(line) != 5 || line[3].Hash != h("3") {
		t.Fatalf("%v %+v", err, line)
	}
	merges := Pick(line, 1, true)
	if len(merges) != 3 || merges[1].Hash != h("3") {
		t.Errorf("merges: %+v", merges)
	}
	if _, err := FirstParentLine(cs, h("s1"), h("4")); err == nil {
		t.Error("a side-branch commit as the start: no error")
	}
}
