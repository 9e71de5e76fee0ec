package session

import (
	"context"
	"fmt"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/stats"
)

// classicSearch is the classic search after the endpoints (cmp: their
// comparison): a planned sequential decision per midpoint (or per round of
// Jobs midpoints), then the first bad commit confirmed against its parent. It
// fills the session's result.
func (s *Session) classicSearch(ctx context.Context, cmp stats.Comparison) error {
	s.Plan(cmp)
	for {
		if err := s.midpoints(ctx); err != nil {
			return err
		}
		if err := s.classicAnswer(ctx, cmp); err != nil {
			return err
		}
		// Hand marks taken during the confirmation, or stored after the
		// session had ended (it was reopened): the search goes on with them.
		if !s.applyMarks() {
			return nil
		}
		s.res.Outcome, s.res.Range, s.res.FirstBad, s.res.Why = "", nil, "", ""
	}
}

// midpoints places midpoints, one per step (or Jobs per round), until the
// search has its answer; hand marks apply between them.
func (s *Session) midpoints(ctx context.Context) error {
	c := s.cfg
	for {
		s.applyMarks()
		var err error
		if c.Jobs > 1 {
			if pts := s.search.NextK(c.Jobs); len(pts) > 1 {
				err = s.round(ctx, pts)
				if err != nil {
					return err
				}
				continue
			}
		}
		cand, ok := s.search.Next()
		if !ok {
			if s.applyMarks() {
				continue // marks given after the search had ended
			}
			break
		}
		side, err := s.classify(ctx, cand)
		if err != nil {
			return err
		}
		s.markMeasured(cand, side)
	}
	return nil
}

// classicAnswer sets the result from the search's answer: a range, or the
// first bad commit confirmed against its parent.
func (s *Session) classicAnswer(ctx context.Context, cmp stats.Comparison) error {
	r := s.search.Result()
	switch r.Outcome {
	case bisect.Ambiguous:
		s.res.Outcome, s.res.Range = Ambiguous, r.Range
		s.res.Why = fmt.Sprintf("skipped commits border the first bad commit: it is one of %d commits", len(r.Range))
		return nil
	case bisect.Found:
	default:
		return fmt.Errorf("search ended while still running (internal error)")
	}
	// Confirmation against the parent.
	s.res.FirstBad = r.FirstBad
	s.res.Outcome = Found
	parent := s.parentOf(r.FirstBad)
	if why := s.unconfirmed(r.FirstBad, parent, cmp); why != "" {
		s.res.Why = why
		return nil
	}
	cc, err := s.compare(ctx, parent, r.FirstBad, RoleConfirm, s.conf, s.cfg.Threshold)
	if bisect.IsUntestable(err) {
		s.res.Outcome, s.res.Range, s.res.FirstBad = Ambiguous, []string{r.FirstBad, parent}, ""
		s.res.Why = fmt.Sprintf("%.10s could not be confirmed against its parent %.10s: %v", r.FirstBad, parent, err)
		return nil
	}
	if err != nil {
		return err
	}
	if s.changed(cc) {
		s.res.Why = fmt.Sprintf("confirmed against its parent %.10s: %+.1f%% (%s)", parent, 100*cc.Shift.Est, cc.Rule)
		return nil
	}
	s.res.Outcome, s.res.Range, s.res.FirstBad = Ambiguous, []string{r.FirstBad, parent}, ""
	s.res.Why = fmt.Sprintf("%.10s was not confirmed against its parent %.10s (%s, %s): the change may be spread over several commits",
		r.FirstBad, parent, cc.Verdict, cc.Rule)
	return nil
}
