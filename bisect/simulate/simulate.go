// Package simulate drives the real session (search and decisions) with the
// simulated measurer of package sim over many sessions and counts how often the
// answer is right: the evidence behind the statistical claims in the README
// (STATISTICS.md, "How we know it works").
package simulate

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/sim"
)

// Scenario is one kind of history and machine.
type Scenario struct {
	Commits     int     // commits after good; the last is bad
	CulpritPos  int     // 1..Commits; 0 = nothing regressed
	Factor      float64 // throughput factor of the culprit (0.6 = 40% slower)
	CV          float64 // per-run noise (log-normal coefficient of variation)
	DriftPerRun float64 // relative change of the machine's speed per run
	Broken      []int   // positions that do not build
}

// Summary counts the outcomes of many sessions of a scenario.
type Summary struct {
	Sessions     int
	Correct      int // found the culprit (or, without one, said no regression)
	WrongCulprit int // named a commit that is not the culprit (a false culprit when there is none)
	NoRegression int // said no regression although there was one (a miss; an improvement, Factor > 1, always ends here)
	Ambiguous    int // answered with a range
	FalseAlarm   int // nothing regressed, yet the answer was a range
	Errors       int
	FirstError   string  // the first session error, for a message
	RangeHolds   int     // ambiguous answers whose range contains the culprit (the others are wrong answers)
	MeanRuns     float64 // runs per session
}

// String renders the summary as one line of rates.
func (s Summary) String() string {
	n := float64(s.Sessions)
	return fmt.Sprintf("%d sessions: correct %.1f%%, wrong culprit %.1f%%, false alarm (range without a culprit) %.1f%%, missed (no regression) %.1f%%, ambiguous %.1f%% (culprit in range %d of %d), errors %d, %.0f runs per session",
		s.Sessions, 100*float64(s.Correct)/n, 100*float64(s.WrongCulprit)/n, 100*float64(s.FalseAlarm)/n, 100*float64(s.NoRegression)/n,
		100*float64(s.Ambiguous)/n, s.RangeHolds, s.Ambiguous, s.Errors, s.MeanRuns)
}

// Run simulates sessions sessions of sc with the session policy of cfg (Good,
// Bad and Commits are filled in), seeded with seed.
func Run(sc Scenario, cfg session.Config, sessions int, seed uint64) Summary {
	var commits []bisect.Commit
	hashes := []string{fmt.Sprintf("%040x", 0)}
	for i := 1; i <= sc.Commits; i++ {
		h := fmt.Sprintf("%040x", i)
		commits = append(commits, bisect.Commit{Hash: h, Subject: fmt.Sprintf("commit %d", i), Parents: []string{hashes[i-1]}})
		hashes = append(hashes, h)
	}
	cfg.Good, cfg.Bad, cfg.Commits = hashes[0], hashes[sc.Commits], commits
	culprit := ""
	if sc.CulpritPos > 0 {
		culprit = hashes[sc.CulpritPos]
	}
	sum := Summary{Sessions: sessions}
	runs := 0
	for i := 0; i < sessions; i++ {
		m := &sim.Measurer{Commits: commits, Base: 1000, CV: sc.CV, DriftPerRun: sc.DriftPerRun,
			Culprits: map[string]float64{}, Untestable: map[string]string{}, Rand: rand.New(rand.NewPCG(seed, uint64(i)))}
		if culprit != "" {
			m.Culprits[culprit] = sc.Factor
		}
		for _, b := range sc.Broken {
			m.Untestable[hashes[b]] = "build failed"
		}
		s, err := session.New(cfg, m)
		if err != nil {
			sum.Errors++
			if sum.FirstError == "" {
				sum.FirstError = err.Error()
			}
			continue
		}
		res, err := s.Run(context.Background())
		runs += m.Calls
		switch {
		case err != nil:
			sum.Errors++
			if sum.FirstError == "" {
				sum.FirstError = err.Error()
			}
		case res.Outcome == session.Found && res.FirstBad == culprit:
			sum.Correct++
		case res.Outcome == session.Found:
			sum.WrongCulprit++
		case res.Outcome == session.NoRegression && culprit == "":
			sum.Correct++
		case res.Outcome == session.NoRegression:
			sum.NoRegression++
		case res.Outcome == session.Ambiguous && culprit == "":
			sum.FalseAlarm++
		case res.Outcome == session.Ambiguous:
			sum.Ambiguous++
			for _, h := range res.Range {
				if h == culprit {
					sum.RangeHolds++
				}
			}
		}
	}
	sum.MeanRuns = float64(runs) / float64(sessions)
	return sum
}
