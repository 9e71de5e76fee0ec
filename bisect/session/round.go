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

// expectedDecisions is the number of decisions a session over n candidates is
// expected to take with jobs commits per round: jobs per round over
// ceil(log_{jobs+1} n) rounds, plus the endpoints, the confirmation and one
// for skips (stats.ExpectedSteps for jobs <= 1).
func expectedDecisions(n, jobs int) int {
	if jobs <= 1 {
		return stats.ExpectedSteps(n)
	}
	rounds := int(math.Ceil(math.Log(float64(max(n, 2))) / math.Log(float64(jobs+1))))
	return jobs*rounds + 3
}

// round places several candidates at once (k-ary search): blocks hold one run
// each of good, bad and every candidate still undecided, in rotating order, so
// that the reference runs are shared; each candidate is decided on its own
// blocks with stats.Classify, and leaves the blocks once decided. The marks are
// applied in the order the search proposed the points; a mark that contradicts
// an earlier one of the round (noise) makes that commit a skip.
func (s *Session) round(ctx context.Context, pts []string) error {
	s.logf("round: placing %d commits together", len(pts))
	type point struct {
		h      string
		blocks []stats.Block
		mark   bisect.Mark
		step   Step
		done   bool
	}
	var active, all []*point
	for _, h := range pts {
		p := &point{h: h}
		all = append(all, p)
		if err := s.prepare(ctx, h); err != nil {
			var u *bisect.UntestableError
			if !errors.As(err, &u) {
				return err
			}
			p.step, p.mark, p.done = s.skipStep(h, u, 0), bisect.Skip, true
			continue
		}
		active = append(active, p)
	}
	// One design for the round (the blocks are shared): the strictest of the
	// points' shares of the error, so that none spends more than its own.
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
		target := d.N(look)
		for len(active) > 0 && len(active[0].blocks) < target {
			i := len(active[0].blocks)
			roles := []string{s.cfg.Good, s.cfg.Bad}
			byHash := map[string]*point{}
			for _, p := range active {
				roles = append(roles, p.h)
				byHash[p.h] = p
			}
			vals := map[string]float64{}
			for k := range roles {
				h := roles[(i+k)%len(roles)]
				p := byHash[h] // nil for the references
				v, err := s.measure(ctx, h, p != nil, triesFor(p != nil))
				if err != nil {
					var u *bisect.UntestableError
					if p != nil && errors.As(err, &u) {
						p.step, p.mark, p.done = s.skipStep(h, u, look), bisect.Skip, true
						continue
					}
					if bisect.IsUntestable(err) {
						return fmt.Errorf("reference %.10s failed during a round: %w", h, err)
					}
					return err
				}
				if !s.cfg.Metric.HigherIsBetter() {
					v = 1 / v
				}
				vals[h] = v
			}
			var still []*point
			for _, p := range active {
				if p.done {
					continue // failed in this block
				}
				p.blocks = append(p.blocks, stats.Block{Good: vals[s.cfg.Good], Bad: vals[s.cfg.Bad], Cand: vals[p.h]})
				still = append(still, p)
			}
			active = still
		}
		var still []*point
		for _, p := range active {
			cl := s.placed(stats.Classify(p.blocks, d.LookAlpha(look)))
			s.logf("midpoint %.10s, look %d: %s (%s)", p.h, look, cl.Side, cl.Rule)
			if cl.Side == stats.Undecided && !cl.Between && look < d.Looks() {
				still = append(still, p)
				continue
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
		}
		active = still
	}
	// Marks in the order the search proposed the points; the steps say the
	// verdict the search took, so that the log replays in git.
	for _, p := range all {
		if !s.search.Consistent(p.h, p.mark) {
			why := fmt.Sprintf("measured %s, which contradicts another verdict of the same round: treated as skipped", p.mark)
			s.res.Skipped[p.h] = why
			s.logf("%.10s: %s", p.h, why)
			p.mark, p.step.Verdict = bisect.Skip, "skip"
			p.step.Note = strings.TrimPrefix(p.step.Note+"; "+why, "; ")
		}
		s.search.Mark(p.h, p.mark)
		s.res.Verdicts[p.h] = p.mark.String()
		s.step(p.step)
	}
	return nil
}
