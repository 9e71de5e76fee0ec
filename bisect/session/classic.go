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
	c := s.cfg
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
	switch {
	case c.NoConfirm:
		s.res.Why = "bisection ended (not confirmed against the parent: " + s.cfg.setting("no-confirm") + ")"
		return nil
	case parent == "":
		s.res.Why = "bisection ended (the first bad commit has no parent to confirm against)"
		return nil
	case s.markedGood(parent):
		// Measuring the parent could only contradict the user.
		m, _ := s.byHand(parent)
		s.res.Why = fmt.Sprintf("bisection ended at the parent %.10s marked good by hand (%s): not confirmed by runs", parent, m.Reason)
		return nil
	case s.markedBad(r.FirstBad):
		// No run is taken of a commit marked by hand.
		m, _ := s.byHand(r.FirstBad)
		s.res.Why = fmt.Sprintf("bisection ended at %.10s, marked bad by hand (%s): not confirmed by runs", r.FirstBad, m.Reason)
		return nil
	case parent == c.Good && r.FirstBad == c.Bad:
		// The endpoints' comparison was this very test, at a level at
		// least as strict: measuring the pair again would add nothing.
		s.res.Why = fmt.Sprintf("confirmed against its parent %.10s by the endpoints' comparison: %+.1f%% (%s)", parent, 100*cmp.Shift.Est, cmp.Rule)
		return nil
	}
	cc, err := s.compare(ctx, parent, r.FirstBad, RoleConfirm)
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
