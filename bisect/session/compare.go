package session

import (
	"context"
	"fmt"

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
// with stats.Compare at each look of design d, against threshold.
func (s *Session) compare(ctx context.Context, old, new string, role Role, d stats.Design, threshold float64) (stats.Comparison, error) {
	var xs, ys []float64
	var cmp stats.Comparison
	for _, h := range []string{old, new} {
		if err := s.prepare(ctx, h); err != nil {
			return cmp, endpointError(role, h == new, err)
		}
	}
	same := d.SameAlpha(1) // the same at every look
	for look := 1; ; look++ {
		target := d.N(look)
		for len(xs) < target {
			order := []string{old, new}
			if len(xs)%2 == 1 {
				order = []string{new, old}
			}
			for _, h := range order {
				v, err := s.measure(ctx, h, true, referenceTries)
				if err != nil {
					return cmp, endpointError(role, h == new, err)
				}
				if h == old {
					xs = append(xs, v)
				} else {
					ys = append(ys, v)
				}
			}
			if role == RoleEndpoints && len(s.cfg.Hosts) > 1 {
				if err := s.hostPairs(ctx, order); err != nil {
					return cmp, err
				}
			}
		}
		cmp = stats.CompareAt(xs, ys, threshold, d.LookAlpha(look), same)
		s.logf("%s %.10s vs %.10s, look %d: %s (%s)", role, old, new, look, cmp.Verdict, cmp.Rule)
		if cmp.Verdict != stats.Unknown || look >= d.Looks() {
			st := Step{Role: role, Commit: new, Against: old, Verdict: CompareVerdict(cmp.Verdict), Reason: cmp.Rule,
				Need: cmp.Need, Compare: &cmp, Looks: look}
			s.step(st)
			return cmp, nil
		}
	}
}

// hostPairs gives every runner host but the first (which measures the
// endpoints' comparison) a run of each endpoint in order, alongside the
// first's pair: each host has its own references by the time the search
// places commits on it. Their runs are the posterior's, never the
// comparison's (runs are comparable only within a host).
func (s *Session) hostPairs(ctx context.Context, order []string) error {
	defer func() { s.on = 0 }()
	for i := 1; i < len(s.cfg.Hosts); i++ {
		s.on = i
		for _, h := range order {
			if _, err := s.measure(ctx, h, false, referenceTries); err != nil {
				if bisect.IsUntestable(err) {
					return fmt.Errorf("reference %.10s failed on host %s: %w", h, s.cfg.Hosts[i], err)
				}
				return err
			}
		}
	}
	if r, ok := s.m.(bisect.RoundEnder); ok {
		r.EndRound()
	}
	return nil
}
