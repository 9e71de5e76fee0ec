package session

import (
	"context"
	"math"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/stats"
)

// NewComparison prepares a comparison of two revisions (perfbisect compare):
// cfg.Good is the base (old), cfg.Bad the head (new); neither needs to be an
// ancestor of the other and cfg.Commits is not used. The comparison is one
// decision with the whole error 1-Confidence, looked at as the endpoints are
// (--repeats, then +--repeats per look up to --max-repeats). It validates cfg.
func NewComparison(cfg Config, m bisect.Measurer) (*Session, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Good == "" || cfg.Bad == "" {
		return nil, bisect.Usagef("a comparison needs a base and a head revision")
	}
	b := stats.Budget{Confidence: cfg.Confidence, Steps: 1, Looks: stats.Looks(cfg.Repeats, cfg.MaxRepeats, cfg.Repeats)}
	ends := stats.Design{Start: cfg.Repeats, Batch: cfg.Repeats, Max: cfg.MaxRepeats, Alpha: b.StepAlpha()}
	if !ends.CanDecide() {
		return nil, bisect.Usagef("{repeats} %d to {max-repeats} %d cannot reach p <= %.2g at any look: use {max-repeats} %d or more", cfg.Repeats, cfg.MaxRepeats, ends.LookAlpha(ends.Looks()), stats.RunsNeeded(ends.LookAlpha(ends.Looks())))
	}
	return &Session{cfg: cfg, m: m, budget: b, ends: ends, mid: ends, conf: ends, res: &Result{
		Runs: map[string][]bisect.Run{}, Verdicts: map[string]string{}, Skipped: map[string]string{}, Budget: b,
		Improvement: cfg.Improvement,
	}}, nil
}

// Compare measures the base and the head interleaved until the comparison is
// DIFFERENT or SAME, or UNKNOWN at --max-repeats, and reports whether the
// head has the change looked for (a regression, or with Improvement a
// speed-up; Config.Changed). Errors as for Run (an *EndpointError when either
// revision cannot be measured). Only for a session of NewComparison.
func (s *Session) Compare(ctx context.Context) (cmp stats.Comparison, changed bool, err error) {
	cmp, err = s.compare(ctx, s.cfg.Good, s.cfg.Bad, RoleCompare, s.ends, s.cfg.Threshold)
	if err != nil {
		return cmp, false, err
	}
	return cmp, s.changed(cmp), nil
}

// Endpoints measures the endpoints interleaved, as the first step of Run, and
// reports whether they show the change looked for; when not, why says so. It
// is what perfbisect run does once per git bisect before placing commits.
// Errors as for Run (an *EndpointError for an endpoint that cannot be measured).
func (s *Session) Endpoints(ctx context.Context) (cmp stats.Comparison, changed bool, why string, err error) {
	cmp, err = s.compare(ctx, s.cfg.Good, s.cfg.Bad, RoleEndpoints, s.ends, s.cfg.Threshold)
	if err != nil {
		return cmp, false, "", err
	}
	if !s.changed(cmp) {
		return cmp, false, s.noChange(cmp), nil
	}
	s.Plan(cmp)
	return cmp, true, "", nil
}

// endpointError wraps an untestable endpoint's error in an *EndpointError (the
// session stops with that evidence); other errors pass unchanged.
func endpointError(role Role, isBad bool, err error) error {
	if role != RoleEndpoints && role != RoleCompare || !bisect.IsUntestable(err) {
		return err
	}
	which := "good"
	if isBad {
		which = "bad"
	}
	return &EndpointError{Which: which, Err: err}
}

// compare measures old and new interleaved (old new, new old, ...) and decides
// with stats.Compare at each look of design d, against threshold. With
// runner hosts every host measures the pair in each turn, and the
// comparison is of the runs scaled to their host's level (each host's
// runs divided by the geometric mean of its pairs: runs are comparable
// only within a host, and every host measures both sides alike).
func (s *Session) compare(ctx context.Context, old, new string, role Role, d stats.Design, threshold float64) (stats.Comparison, error) {
	var xs, ys []float64
	var xh, yh []int // the host of each run
	var cmp stats.Comparison
	for _, h := range []string{old, new} {
		if err := s.prepare(ctx, h); err != nil {
			return cmp, endpointError(role, h == new, err)
		}
	}
	hosts := max(len(s.cfg.Hosts), 1)
	defer func() { s.on = 0 }()
	same := d.SameAlpha(1) // the same at every look
	for look := 1; ; look++ {
		target := d.N(look)
		for len(xs) < target {
			order := []string{old, new}
			if (len(xs)/hosts)%2 == 1 {
				order = []string{new, old}
			}
			if p, ok := s.m.(bisect.RoundPlanner); ok && hosts > 1 && s.replayDone() {
				var plan []bisect.HostRun
				for _, host := range s.cfg.Hosts {
					for _, h := range order {
						plan = append(plan, bisect.HostRun{Host: host, Commit: h})
					}
				}
				p.PlanRound(ctx, plan)
			}
			for i := range hosts {
				s.on = i
				for _, h := range order {
					v, err := s.measure(ctx, h, true, referenceTries)
					if err != nil {
						return cmp, endpointError(role, h == new, err)
					}
					// The host that took it: another when this one was
					// lost (RoundPlanner).
					at := s.lastHost
					if h == old {
						xs, xh = append(xs, v), append(xh, at)
					} else {
						ys, yh = append(ys, v), append(yh, at)
					}
				}
			}
			if r, ok := s.m.(bisect.RoundEnder); ok && hosts > 1 {
				r.EndRound()
			}
		}
		cx, cy := xs, ys
		if hosts > 1 {
			scale := pairLevels(xs, xh, ys, yh, hosts)
			cx, cy = divideBy(xs, xh, scale), divideBy(ys, yh, scale)
		}
		cmp = stats.CompareAt(cx, cy, threshold, d.LookAlpha(look), same)
		s.logf("%s %.10s vs %.10s, look %d: %s (%s)", role, old, new, look, cmp.Verdict, cmp.Rule)
		if cmp.Verdict != stats.Unknown || look >= d.Looks() {
			st := Step{Role: role, Commit: new, Against: old, Verdict: CompareVerdict(cmp.Verdict), Reason: cmp.Rule,
				Need: cmp.Need, Compare: &cmp, Looks: look}
			s.step(st)
			return cmp, nil
		}
	}
}

// pairLevels is each host's level in a comparison: the geometric mean of
// its runs of both sides (it measures them in pairs), over that of all
// runs, so that scaled runs keep the metric's units.
func pairLevels(xs []float64, xh []int, ys []float64, yh []int, hosts int) []float64 {
	sum, n := make([]float64, hosts), make([]float64, hosts)
	var all, count float64
	for k, vs := range [][]float64{xs, ys} {
		hs := [][]int{xh, yh}[k]
		for i, v := range vs {
			l := math.Log(v)
			sum[hs[i]] += l
			n[hs[i]]++
			all += l
			count++
		}
	}
	out := make([]float64, hosts)
	for h := range out {
		out[h] = 1
		if n[h] > 0 {
			out[h] = math.Exp(sum[h]/n[h] - all/count)
		}
	}
	return out
}

// divideBy is vs, each divided by its host's level.
func divideBy(vs []float64, hs []int, level []float64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = v / level[hs[i]]
	}
	return out
}
