package session

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/stats"
)

// Place measures one candidate in blocks with the endpoints and returns its
// mark (bisect.Good, bisect.Bad, or bisect.Skip when it is untestable or still
// undecided at the limit) with the decision's evidence: one step of Run, for
// perfbisect run. Errors are the tool's or the machine's (or a reference that
// fails), never the candidate's.
func (s *Session) Place(ctx context.Context, cand string) (bisect.Mark, Step, error) {
	m, err := s.classify(ctx, cand)
	if err != nil || len(s.res.Steps) == 0 {
		return m, Step{}, err
	}
	return m, s.res.Steps[len(s.res.Steps)-1], nil
}

// classify measures blocks of (good, bad, candidate) in rotating order and places
// the candidate with stats.Classify; an untestable candidate or one still
// undecided at the limit is skipped.
func (s *Session) classify(ctx context.Context, cand string) (bisect.Mark, error) {
	var blocks []stats.Block
	roles := []string{s.cfg.Good, s.cfg.Bad, cand}
	d := s.designFor(s.decided + 1)
	if !d.CanDecide() {
		return s.skip(cand, s.spent(d), 0), nil
	}
	if err := s.prepare(ctx, cand); err != nil {
		var u *bisect.UntestableError
		if errors.As(err, &u) {
			return s.skip(cand, u, 0), nil
		}
		return bisect.Unmarked, err
	}
	s.decided++
	for look := 1; ; look++ {
		target := d.N(look)
		for len(blocks) < target {
			var b stats.Block
			i := len(blocks)
			for k := 0; k < 3; k++ {
				h := roles[(i+k)%3]
				v, err := s.measure(ctx, h, h == cand, triesFor(h == cand))
				if err != nil {
					var u *bisect.UntestableError
					if h == cand && errors.As(err, &u) {
						return s.skip(cand, u, look), nil
					}
					if h != cand && bisect.IsUntestable(err) {
						return bisect.Unmarked, fmt.Errorf("reference %.10s failed while measuring %.10s: %w", h, cand, err)
					}
					return bisect.Unmarked, err
				}
				switch h {
				case s.cfg.Good:
					b.Good = v
				case s.cfg.Bad:
					b.Bad = v
				default:
					b.Cand = v
				}
			}
			if !s.cfg.Metric.HigherIsBetter() {
				b.Good, b.Bad, b.Cand = 1/b.Good, 1/b.Bad, 1/b.Cand
			}
			blocks = append(blocks, b)
		}
		cl := s.placed(stats.Classify(blocks, d.LookAlpha(look)))
		s.logf("midpoint %.10s, look %d: %s (%s)", cand, look, cl.Side, cl.Rule)
		if cl.Side != stats.Undecided || cl.Between || look >= d.Looks() {
			st := Step{Role: RoleMidpoint, Commit: cand, Against: s.cfg.Good, Reason: cl.Rule, Need: cl.Need,
				Note: cl.Note, Class: &cl, Looks: look}
			var m bisect.Mark
			switch cl.Side {
			case stats.GoodSide:
				m, st.Verdict = bisect.Good, "good"
			case stats.BadSide:
				m, st.Verdict = bisect.Bad, "bad"
			default:
				m, st.Verdict = bisect.Skip, "skip"
				s.res.Skipped[cand] = undecided(cl, len(blocks))
			}
			s.step(st)
			return m, nil
		}
	}
}

// undecided says why a measured candidate is skipped.
func undecided(cl stats.Classification, blocks int) string {
	if cl.Between {
		return fmt.Sprintf("neither good nor bad after %d blocks: %s", blocks, cl.Rule)
	}
	return fmt.Sprintf("undecided at the repeat limit (%d blocks): %s; %s", blocks, cl.Rule, cl.Need)
}

// spent is why a midpoint is skipped unmeasured: the session's error budget
// leaves its decision a share that design d cannot reach.
func (s *Session) spent(d stats.Design) *bisect.UntestableError {
	return &bisect.UntestableError{Reason: "error budget spent", Err: fmt.Errorf(
		"after %d midpoint decisions the next may err with probability %.2g, which %d blocks cannot reach (best p %.2g): not measured; a higher --max-repeats or a narrower range would decide it",
		s.cfg.Decided+s.decided, d.Alpha, d.Max, stats.MinP(d.Max, d.Max))}
}

// designFor is the design of midpoint decision k (1-based, counted in this
// process): the planned one at that decision's share of the error
// (Budget.MidpointAlpha), replanned when the share is smaller than the plan's.
func (s *Session) designFor(k int) stats.Design {
	d := s.mid
	alpha := s.budget.MidpointAlpha(s.cfg.Decided + k)
	if alpha == d.Alpha {
		return d
	}
	if s.half > 0 {
		d, _ = stats.Plan(s.half, alpha, 2, s.cfg.MaxRepeats)
		return d
	}
	d.Alpha = alpha
	return d
}

// placed keeps a classification's partial-change note only when the
// candidate is at least the threshold away from the end it sits with: a
// significant but smaller difference (a docs-only commit measured 1% off) is
// not worth a warning.
func (s *Session) placed(cl stats.Classification) stats.Classification {
	if cl.Note == "" {
		return cl
	}
	end := cl.MedianGood
	if cl.Side == stats.BadSide {
		end = cl.MedianBad
	}
	if end != 0 && math.Abs(cl.MedianCand-end)/math.Abs(end) < s.cfg.Threshold {
		cl.Note = ""
	}
	return cl
}

// skip records an untestable candidate and its step.
func (s *Session) skip(cand string, u *bisect.UntestableError, look int) bisect.Mark {
	s.step(s.skipStep(cand, u, look))
	return bisect.Skip
}

// skipStep records why an untestable candidate is skipped and returns its step
// (not yet emitted).
func (s *Session) skipStep(cand string, u *bisect.UntestableError, look int) Step {
	why := u.Reason
	if u.Err != nil {
		why += ": " + u.Err.Error()
	}
	s.res.Skipped[cand] = why
	return Step{Role: RoleMidpoint, Commit: cand, Verdict: "skip", Reason: why, Looks: look}
}
