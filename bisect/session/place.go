package session

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

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

// classify places one midpoint between the endpoints (placeAll) and records
// its step.
func (s *Session) classify(ctx context.Context, cand string) (bisect.Mark, error) {
	ps, err := s.placeAll(ctx, []string{cand})
	if err != nil {
		return bisect.Unmarked, err
	}
	s.step(ps[0].step)
	return ps[0].mark, nil
}

// placement is one candidate's decision: its blocks of (good, bad,
// candidate) runs, its mark and the step that records it.
type placement struct {
	h      string
	blocks []stats.Block
	mark   bisect.Mark
	step   Step
	done   bool
}

// placeAll places pts (one midpoint, or a round's k commits) between the
// endpoints: the look loop of the classic search. Each block measures the
// endpoints and every point still undecided once, in rotating order (the
// blocks of a round share their good and bad runs); after each look of the
// design every point is classified, and one that is decided (or at the last
// look) leaves the loop. The design is the strictest of the points' shares of
// the error. A point that cannot be built or measured is skipped; so is every
// point once the error budget can decide nothing (then without a build). It
// returns the placements in pts' order; it records no step. Errors: a
// reference (good or bad) that fails, or a failure that is not the
// revision's.
func (s *Session) placeAll(ctx context.Context, pts []string) ([]*placement, error) {
	if len(pts) > 1 {
		s.logf("round: placing %d commits together", len(pts))
	}
	var active, all []*placement
	for _, h := range pts {
		all = append(all, &placement{h: h})
	}
	if d := s.designFor(s.decided + 1); !d.CanDecide() {
		for _, p := range all {
			p.step, p.mark, p.done = s.skipStep(p.h, s.spent(d), 0), bisect.Skip, true
		}
		return all, nil
	}
	for _, p := range all {
		if err := s.prepare(ctx, p.h); err != nil {
			var u *bisect.UntestableError
			if !errors.As(err, &u) {
				return nil, err
			}
			p.step, p.mark, p.done = s.skipStep(p.h, u, 0), bisect.Skip, true
			continue
		}
		active = append(active, p)
	}
	// One design for the points (the blocks are shared): the strictest of
	// their shares of the error, so that none spends more than its own.
	var d stats.Design
	for i := range active {
		s.decided++
		if pd := s.designFor(s.decided); i == 0 || pd.Alpha < d.Alpha {
			d = pd
		}
	}
	if !d.CanDecide() && len(active) > 0 {
		for _, p := range active {
			p.step, p.mark, p.done = s.skipStep(p.h, s.spent(d), 0), bisect.Skip, true
		}
		active = nil
	}
	for look := 1; len(active) > 0; look++ {
		var err error
		if active, err = s.measureBlocks(ctx, active, d.N(look), look); err != nil {
			return nil, err
		}
		var still []*placement
		for _, p := range active {
			if !s.decide(p, d, look) {
				still = append(still, p)
			}
		}
		active = still
	}
	return all, nil
}

// measureBlocks measures blocks until the active points have target each,
// and returns the points still active (one that cannot be measured is
// skipped at this look; when none is left, the block stops).
func (s *Session) measureBlocks(ctx context.Context, active []*placement, target, look int) ([]*placement, error) {
	for len(active) > 0 && len(active[0].blocks) < target {
		i := len(active[0].blocks)
		roles := []string{s.cfg.Good, s.cfg.Bad}
		byHash := map[string]*placement{}
		var names []string
		for _, p := range active {
			roles = append(roles, p.h)
			byHash[p.h] = p
			names = append(names, fmt.Sprintf("%.10s", p.h))
		}
		vals := map[string]float64{}
		left := len(active)
		for k := range roles {
			if left == 0 {
				break // every point failed in this block: the references would measure nothing
			}
			h := roles[(i+k)%len(roles)]
			p := byHash[h] // nil for the references
			v, err := s.measure(ctx, h, p != nil, triesFor(p != nil))
			if err != nil {
				var u *bisect.UntestableError
				if p != nil && errors.As(err, &u) {
					p.step, p.mark, p.done = s.skipStep(h, u, look), bisect.Skip, true
					left--
					continue
				}
				if bisect.IsUntestable(err) {
					return nil, fmt.Errorf("reference %.10s failed while measuring %s: %w", h, strings.Join(names, ", "), err)
				}
				return nil, err
			}
			if !s.cfg.Metric.HigherIsBetter() {
				v = 1 / v
			}
			vals[h] = v
		}
		var still []*placement
		for _, p := range active {
			if p.done {
				continue // failed in this block
			}
			p.blocks = append(p.blocks, stats.Block{Good: vals[s.cfg.Good], Bad: vals[s.cfg.Bad], Cand: vals[p.h]})
			still = append(still, p)
		}
		active = still
	}
	return active, nil
}

// decide classifies p after look of design d; when p is decided (or the
// look is the last) it sets p's mark and step and returns true.
func (s *Session) decide(p *placement, d stats.Design, look int) bool {
	cl := s.placed(stats.Classify(p.blocks, d.LookAlpha(look)))
	s.logf("midpoint %.10s, look %d: %s (%s)", p.h, look, cl.Side, cl.Rule)
	if cl.Side == stats.Undecided && !cl.Between && look < d.Looks() {
		return false
	}
	p.step = Step{Role: RoleMidpoint, Commit: p.h, Against: s.cfg.Good, Reason: cl.Rule, Need: cl.Need, Note: cl.Note, Class: &cl, Looks: look}
	switch cl.Side {
	case stats.GoodSide:
		p.mark, p.step.Verdict = bisect.Good, "good"
	case stats.BadSide:
		p.mark, p.step.Verdict = bisect.Bad, "bad"
	default:
		p.mark, p.step.Verdict = bisect.Skip, "skip"
		s.res.Skipped[p.h] = undecided(cl, len(p.blocks))
	}
	p.done = true
	return true
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
		"after %d midpoint decisions the next may err with probability %.2g, which %d blocks cannot reach (best p %.2g): not measured; a higher %s or a narrower range would decide it",
		s.cfg.Decided+s.decided, d.Alpha, d.Max, stats.MinP(d.Max, d.Max), s.cfg.setting("max-repeats"))}
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
