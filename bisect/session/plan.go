package session

import (
	"fmt"
	"math"
	"time"

	"github.com/perfbisect/perfbisect/stats"
)

// Plan sets the designs of the rest of the session from the endpoints'
// comparison (its relative shift and per-run noise) and makes the pre-flight
// estimate: a midpoint is placed against the midpoint between good and bad, so
// its effect is half the good-bad shift on a log scale, against the noise of a
// candidate run and of a midpoint (the mean of a good and a bad run): effect =
// (|shift|/2) / (noise*sqrt(1.5)). Its design starts with the fewest blocks
// that decide that effect at the first look with probability 0.8
// (stats.Plan, at most --max-repeats). The confirmation compares the culprit
// with its parent, the full shift against the noise of two runs. Run calls Plan
// after the endpoints; perfbisect run calls it with the stored endpoints'
// comparison before placing a commit.
func (s *Session) Plan(cmp stats.Comparison) {
	shift := math.Abs(math.Log1p(cmp.Shift.Est))
	noise := cmp.Noise
	if !(noise > 0) || math.IsNaN(shift) || shift == 0 || s.cfg.Fixed {
		return // keep the fixed schedules
	}
	alpha := s.budget.StepAlpha()
	half := shift / 2 / (noise * math.Sqrt(1.5))
	full := shift / (noise * math.Sqrt2)
	mid, reachable := stats.Plan(half, alpha, 2, s.cfg.MaxRepeats)
	conf, _ := stats.Plan(full, alpha, 2, s.cfg.MaxRepeats)
	s.mid, s.conf, s.half = mid, conf, half
	s.estimate(cmp, half, full, reachable)
}

// estimate makes the pre-flight estimate (Result.Estimate, EstimatedRuns):
// expected runs of the midpoint steps (stats.ExpectedN of the midpoint design;
// a step still undecided at the limit is skipped and costs another step) and
// of the confirmation, and the wall time at this session's time per run; with
// advice when the midpoint effect is out of reach of --max-repeats.
func (s *Session) estimate(cmp stats.Comparison, half, full float64, reachable bool) {
	c := s.cfg
	n := len(s.search.Candidates())
	width := 3
	steps := math.Ceil(math.Log2(float64(max(n, 1))))
	if c.Jobs > 1 {
		width = 2 + c.Jobs
		steps = math.Ceil(math.Log(float64(max(n, 1))) / math.Log(float64(c.Jobs+1)))
	}
	decided := stats.SequentialPower(half, s.mid)
	// A skipped midpoint makes the search try a neighbour: about 1/decided
	// steps per bisection step, at most every candidate.
	steps = math.Min(steps/math.Max(decided, 0.05), float64(n))
	blocks := stats.ExpectedN(half, s.mid)
	runs := steps*float64(width)*blocks + 2*stats.ExpectedN(full, s.conf)
	if c.NoConfirm {
		runs = steps * float64(width) * blocks
	}
	s.res.EstimatedRuns = s.runs + int(math.Round(runs))
	var perRun time.Duration
	if s.runs > 0 {
		perRun = s.wall / time.Duration(s.runs)
	}
	s.res.Estimate = fmt.Sprintf("good-bad shift %+.1f%% with %.1f%% noise per run: a midpoint is placed against half of it (%.2g noise units); about %.0f steps of %.1f blocks of %d runs (planned: %s) and the confirmation: about %.0f more runs, %s at %.1fs per run (plus builds)",
		100*cmp.Shift.Est, 100*cmp.Noise, half, steps, blocks, width, s.mid, runs,
		(time.Duration(runs) * perRun).Round(time.Second), perRun.Seconds())
	if !reachable {
		need := min(stats.NeededN(half, s.mid.LookAlpha(s.mid.Looks()), 0.9), 1000)
		mr := s.cfg.setting("max-repeats")
		s.res.Advice = fmt.Sprintf("out of reach: placing a midpoint needs about %d blocks per step (%s %d); most midpoints will be skipped and the answer will be a range. To make it reachable: a longer %s (noise falls about with the square root of the window), %s cpu-per-txn (steadier than tps), CPU pinning of server and client, or %s %d",
			need, mr, c.MaxRepeats, s.cfg.setting("time"), s.cfg.setting("metric"), mr, need)
		s.res.Estimate += "; " + s.res.Advice
	}
	s.logf("estimate: %s", s.res.Estimate)
	if s.cfg.Hooks.OnEstimate != nil {
		s.cfg.Hooks.OnEstimate(s.res.EstimatedRuns)
	}
}
