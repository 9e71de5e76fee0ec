// Package simmeasure is a simulated bisect.Measurer: revisions whose
// throughput is set by which commits they contain, with log-normal noise,
// linear drift and untestable commits, on simulated histories (Chain,
// Merges). It drives the real search and decision code in tests and in
// perfbisect simulate (package simulate) without servers; nothing else may
// import it.
package simmeasure

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
	DriftPerRun float64            // relative change of the machine's speed per run, e.g. -0.001 (compounded)
	Untestable  map[string]string  // commit -> reason it cannot be measured
	Rand        *rand.Rand
	// Noise is the shape of the per-run noise, of scale CV: NoiseLogNormal
	// (the default), NoiseNormal, NoiseT3 (Student's t with 3 degrees of
	// freedom: heavy tails), NoiseBimodal (log-normal, and one run in five
	// 15% slow, as a real server showed after restarts) or NoiseOutliers
	// (log-normal, and one run in 20 a
	// hiccup 20-50% slower).
	Noise string
	// StepAt, when positive, changes the machine's speed by StepFactor from
	// the StepAt-th run on (a step change: another tenant, a thermal limit).
	StepAt     int
	StepFactor float64
	// BuildEffect is the spread of a per-build level: every commit's runs
	// are multiplied by its own exp(N(0, BuildEffect)), drawn at its first
	// run (code layout and the like: the same every time the commit is
	// measured, independent between commits, the endpoints included).
	BuildEffect float64
	// Layouts is how many code layouts each build is measured in (its
	// objects relinked in that many random orders; its runs rotate over
	// them), each with its own BuildEffect level: 0 or 1, the build's own
	// layout; LayoutPerRun, a new layout for every run (as Stabilizer
	// re-randomises layout: the build effect becomes run noise).
	Layouts int
	// Transient multiplies the first TransientRuns runs of a commit by its
	// factor: a neighbour, or a disturbance nothing saw, while the commit
	// was first measured.
	Transient     map[string]float64
	TransientRuns int
	// Flaky is the probability that a run fails for no fault of the revision
	// (the server dies once); every attempt fails independently.
	Flaky float64

	// Hosts are the speeds of the runner hosts by name (MeasureOn): a
	// host's runs are its speed times the level, and a build there takes
	// BuildRuns over its speed. Measure is the host "" of speed 1.
	Hosts map[string]float64
	// BuildRuns is a build's time in runs on a host of speed 1, for the
	// hosts' clocks (Wall); a commit is built once, on the first host that
	// runs it (the others fetch it from a shared build cache, free).
	BuildRuns float64

	Calls    int      // runs measured (failed ones included)
	Failed   int      // runs that failed (Flaky)
	Prepared []string // commits prepared, in order

	measured map[string]int       // runs per commit (Transient)
	clock    map[string]float64   // per host: its time, in runs (Wall)
	built    map[string]bool      // commits built on some host
	level    map[string][]float64 // each commit's BuildEffect factors, one per layout
	parents  map[string][]string  // Commits' parents, by hash (Contains)
	contains map[[2]string]bool   // Contains' answers
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
	return m.MeasureOn(ctx, "", commit, runs)
}

// MeasureOn is Measure on host (a name of Hosts; "" is a host of speed 1):
// its speed scales the runs, and its clock counts the runs and the build.
// An unknown host is an error.
func (m *Measurer) MeasureOn(ctx context.Context, host, commit string, runs int) ([]bisect.Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	speed := 1.0
	if host != "" {
		sp, ok := m.Hosts[host]
		if !ok {
			return nil, fmt.Errorf("simulated: no host %q", host)
		}
		speed = sp
	}
	if m.clock == nil {
		m.clock, m.built = map[string]float64{}, map[string]bool{}
	}
	if !m.built[commit] {
		m.built[commit] = true
		m.clock[host] += m.BuildRuns / speed
	}
	m.clock[host] += float64(runs)
	if why, ok := m.Untestable[commit]; ok {
		return nil, &bisect.UntestableError{Commit: commit, Reason: why, Err: fmt.Errorf("simulated")}
	}
	f := 1.0
	for c, cf := range m.Culprits {
		if m.Contains(commit, c) {
			f *= cf
		}
	}
	out := make([]bisect.Run, runs)
	for i := range out {
		if m.Flaky > 0 && m.Rand.Float64() < m.Flaky {
			m.Calls++
			m.Failed++
			return nil, &bisect.UntestableError{Commit: commit, Reason: "server crashed during the run", Err: fmt.Errorf("simulated flaky failure")}
		}
		// Compounded, so that a long session cannot drift below zero.
		drift := math.Pow(1+m.DriftPerRun, float64(m.Calls))
		if m.StepAt > 0 && m.Calls >= m.StepAt {
			drift *= m.StepFactor
		}
		tps := m.Base * speed * f * drift * m.noise() * m.buildLevel(commit, m.measured[commit])
		if t, ok := m.Transient[commit]; ok && m.measured[commit] < m.TransientRuns {
			tps *= t
		}
		if m.measured == nil {
			m.measured = map[string]int{}
		}
		m.measured[commit]++
		// Latency and CPU per transaction move inversely with throughput (one
		// client thread), with the same noise.
		lat := time.Duration(float64(time.Second) / tps)
		out[i] = bisect.Run{Commit: commit, TPS: tps, QPS: 18 * tps, Events: int64(tps * 3), Window: 3 * time.Second,
			LatencyPct: lat * 3 / 2, LatencyP95: lat * 3 / 2, LatencyP99: lat * 2,
			CPUPerTxn: time.Duration(float64(time.Millisecond) / f), Wall: 5 * time.Second,
			// As if TPC-C: New-Order is 45% of the transactions.
			TPMC: 0.45 * tps * 60, CPUPerNewOrder: time.Duration(float64(time.Millisecond) / f / 0.45)}
		// A per-second timeline around the run's tps (no draw from Rand, so
		// that seeded sequences stay as they were).
		for s, w := range []float64{0.97, 1.01, 1.02} {
			out[i].Series = append(out[i].Series, bisect.Second{At: time.Duration(s+1) * time.Second, TPS: tps * w,
				QPS: 18 * tps * w, Pct: time.Duration(float64(lat) * 1.5 / w)})
		}
		m.Calls++
	}
	return out, nil
}

// EndRound is the end of a round of runs on every host: the hosts' clocks
// meet at the latest (the round waits for its slowest host).
func (m *Measurer) EndRound() {
	if m.clock == nil {
		m.clock, m.built = map[string]float64{}, map[string]bool{}
	}
	var latest float64
	for _, c := range m.clock {
		latest = max(latest, c)
	}
	for h := range m.clock {
		m.clock[h] = latest
	}
	for h := range m.Hosts {
		m.clock[h] = latest
	}
}

// Wall is the session's time so far, in runs: the latest host clock.
func (m *Measurer) Wall() float64 {
	var latest float64
	for _, c := range m.clock {
		latest = max(latest, c)
	}
	return latest
}

// LayoutPerRun is Measurer.Layouts for a new layout in every run.
const LayoutPerRun = -1

// buildLevel is the BuildEffect factor of commit's run n (0-based): that of
// its layout n mod Layouts, drawn at the layout's first run, or a new one
// per run with LayoutPerRun (no draw without a BuildEffect, so that seeded
// sequences stay as they were).
func (m *Measurer) buildLevel(commit string, n int) float64 {
	if m.BuildEffect == 0 {
		return 1
	}
	if m.Layouts == LayoutPerRun {
		return math.Exp(m.BuildEffect * m.Rand.NormFloat64())
	}
	k := max(m.Layouts, 1)
	if m.level == nil {
		m.level = map[string][]float64{}
	}
	ls := m.level[commit]
	if i := n % k; i < len(ls) {
		return ls[i]
	}
	l := math.Exp(m.BuildEffect * m.Rand.NormFloat64())
	m.level[commit] = append(ls, l)
	return l
}

// Noise shapes of Measurer.Noise.
const (
	NoiseLogNormal = "lognormal"
	NoiseNormal    = "normal"
	NoiseT3        = "t3"
	NoiseOutliers  = "outliers"
	NoiseBimodal   = "bimodal"
)

// noise returns one run's multiplicative noise factor.
func (m *Measurer) noise() float64 {
	switch m.Noise {
	case NoiseNormal:
		return math.Max(1+m.Rand.NormFloat64()*m.CV, 0.01)
	case NoiseT3:
		// t(3) = Z / sqrt(chi2(3)/3), variance 3: scaled to standard deviation CV.
		z := m.Rand.NormFloat64()
		var chi float64
		for k := 0; k < 3; k++ {
			g := m.Rand.NormFloat64()
			chi += g * g
		}
		t := z / math.Sqrt(chi/3)
		return math.Exp(t / math.Sqrt(3) * m.CV)
	case NoiseBimodal:
		f := math.Exp(m.Rand.NormFloat64() * m.CV)
		if m.Rand.Float64() < 0.2 {
			f *= 0.85
		}
		return f
	case NoiseOutliers:
		f := math.Exp(m.Rand.NormFloat64() * m.CV)
		if m.Rand.Float64() < 0.05 {
			f *= 0.5 + 0.3*m.Rand.Float64()
		}
		return f
	default:
		return math.Exp(m.Rand.NormFloat64() * m.CV)
	}
}

// Contains reports whether culprit is commit or one of its ancestors in the range.
// The answers are memoized: Commits must not change once measuring began.
func (m *Measurer) Contains(commit, culprit string) bool {
	key := [2]string{commit, culprit}
	if v, ok := m.contains[key]; ok {
		return v
	}
	if m.parents == nil {
		m.parents = make(map[string][]string, len(m.Commits))
		for _, c := range m.Commits {
			m.parents[c.Hash] = c.Parents
		}
		m.contains = map[[2]string]bool{}
	}
	v := m.reaches(commit, culprit)
	m.contains[key] = v
	return v
}

// reaches walks commit's ancestry (through parents) looking for culprit.
func (m *Measurer) reaches(commit, culprit string) bool {
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
		stack = append(stack, m.parents[h]...)
	}
	return false
}

// Chain makes a linear history of n commits after a root: the commits (each
// with its parent and the subject "commit i") and the hashes, hashes[0] the
// root (good) and hashes[n] the last (bad). Hashes are i in 40 decimal digits.
func Chain(n int) ([]bisect.Commit, []string) {
	var cs []bisect.Commit
	hs := []string{fmt.Sprintf("%040d", 0)}
	for i := 1; i <= n; i++ {
		h := fmt.Sprintf("%040d", i)
		cs = append(cs, bisect.Commit{Hash: h, Subject: fmt.Sprintf("commit %d", i), Parents: []string{hs[i-1]}})
		hs = append(hs, h)
	}
	return cs, hs
}

// Merges makes a history of n commits after a root with side branches: every
// fifth commit of the mainline is a merge of a branch of two commits forked
// from the mainline commit four before it (the branch commits count in n).
// It returns the commits and the hashes in creation order: hashes[0] the
// root (good), hashes[n] the last mainline commit (bad); hashes[i] descends
// from hashes[j] only if j < i. Hashes are i in 40 decimal digits.
func Merges(n int) ([]bisect.Commit, []string) {
	var cs []bisect.Commit
	hs := []string{fmt.Sprintf("%040d", 0)}
	main := []string{hs[0]} // the mainline so far
	add := func(parents ...string) string {
		h := fmt.Sprintf("%040d", len(hs))
		cs = append(cs, bisect.Commit{Hash: h, Subject: fmt.Sprintf("commit %d", len(hs)), Parents: parents, Time: int64(len(hs))})
		hs = append(hs, h)
		return h
	}
	for len(hs) <= n {
		if len(main)%5 == 0 && len(main) >= 5 && len(hs)+3 <= n+1 {
			fork := main[len(main)-4]
			b1 := add(fork)
			b2 := add(b1)
			main = append(main, add(main[len(main)-1], b2))
			continue
		}
		main = append(main, add(main[len(main)-1]))
	}
	// The last commit must be on the mainline: it is bad.
	return cs, hs
}
