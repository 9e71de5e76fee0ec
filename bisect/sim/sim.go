// Package sim is a simulated bisect.Measurer: revisions whose throughput is set
// by which commits they contain, with log-normal noise, linear drift and
// untestable commits. It drives the real search and decision code in tests
// without servers; production code other than a future `simulate` command must
// not import it.
package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
)

// Measurer simulates runs. A commit's tps is Base times the Factor of every
// culprit it contains (a culprit is contained when it is an ancestor of the
// commit or the commit itself).
type Measurer struct {
	Commits     []bisect.Commit    // the range, with parents
	Base        float64            // tps of the good revision
	Culprits    map[string]float64 // commit -> factor (0.6 = 40% slower)
	CV          float64            // per-run noise, coefficient of variation (log-normal)
	DriftPerRun float64            // relative change of the machine's speed per run, e.g. -0.001
	Untestable  map[string]string  // commit -> reason it cannot be measured
	Rand        *rand.Rand

	Calls    int      // runs measured
	Prepared []string // commits prepared, in order
}

// Prepare fails for untestable commits, like a build failure, before any run.
func (m *Measurer) Prepare(ctx context.Context, commit string) error {
	if why, ok := m.Untestable[commit]; ok {
		m.Prepared = append(m.Prepared, commit)
		return &bisect.UntestableError{Commit: commit, Reason: why, Err: fmt.Errorf("simulated")}
	}
	m.Prepared = append(m.Prepared, commit)
	return nil
}

// Measure returns runs simulated runs of commit, or an *bisect.UntestableError.
func (m *Measurer) Measure(ctx context.Context, commit string, runs int) ([]bisect.Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if why, ok := m.Untestable[commit]; ok {
		return nil, &bisect.UntestableError{Commit: commit, Reason: why, Err: fmt.Errorf("simulated")}
	}
	f := 1.0
	for c, cf := range m.Culprits {
		if m.contains(commit, c) {
			f *= cf
		}
	}
	out := make([]bisect.Run, runs)
	for i := range out {
		drift := 1 + m.DriftPerRun*float64(m.Calls)
		tps := m.Base * f * drift * math.Exp(m.Rand.NormFloat64()*m.CV)
		out[i] = bisect.Run{Commit: commit, TPS: tps, Events: int64(tps * 3), Window: 3 * time.Second,
			CPUPerTxn: time.Duration(float64(time.Millisecond) / f), Wall: 5 * time.Second}
		m.Calls++
	}
	return out, nil
}

// contains reports whether culprit is commit or one of its ancestors in the range.
func (m *Measurer) contains(commit, culprit string) bool {
	parents := map[string][]string{}
	for _, c := range m.Commits {
		parents[c.Hash] = c.Parents
	}
	seen := map[string]bool{}
	stack := []string{commit}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if h == culprit {
			return true
		}
		if seen[h] {
			continue
		}
		seen[h] = true
		stack = append(stack, parents[h]...)
	}
	return false
}
