package session

import (
	"context"
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
	all, err := s.placeAll(ctx, pts)
	if err != nil {
		return err
	}
	// Marks in the order the search proposed the points; the steps say the
	// verdict the search took, so that the log replays in git.
	for _, p := range all {
		if m, ok := s.byHand(p.h); ok {
			p.step.Note = strings.TrimPrefix(p.step.Note+"; marked "+m.Mark.String()+" by hand meanwhile: the hand mark stands", "; ")
			s.hand.measured = append(s.hand.measured, Marked{Commit: p.h, Mark: p.mark})
			s.step(p.step)
			continue
		}
		if !s.search.Consistent(p.h, p.mark) {
			why := fmt.Sprintf("measured %s, which contradicts another verdict of the same round: treated as skipped", p.mark)
			s.res.Skipped[p.h] = why
			s.logf("%.10s: %s", p.h, why)
			p.mark, p.step.Verdict = bisect.Skip, "skip"
			p.step.Note = strings.TrimPrefix(p.step.Note+"; "+why, "; ")
		}
		s.markMeasured(p.h, p.mark)
		s.step(p.step)
	}
	return nil
}
