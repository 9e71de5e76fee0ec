package session

import (
	"context"
	"fmt"
	"math"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/stats"
)

// headToHeadAlpha is the level of the probabilistic search's head-to-head.
// The head-to-head only ever withholds a name the posterior gave, so the
// answer's error stays within the posterior's whatever this level is; a
// commit with no step of its own passes its fresh runs with probability at
// most this, and a stricter level would only cost runs of true culprits.
const headToHeadAlpha = 0.02

// unconfirmed says why the first bad commit is named without being put head
// to head with its parent, or "" when it must be: the setting
// (--no-confirm), no parent, a hand mark on either (runs could only
// contradict the user), or a range of one commit (the endpoints' comparison,
// cmp, was that very test).
func (s *Session) unconfirmed(firstBad, parent string, cmp stats.Comparison) string {
	c := s.cfg
	switch {
	case c.NoConfirm:
		return "not confirmed against the parent: " + c.setting("no-confirm")
	case parent == "":
		return "not confirmed: the first bad commit has no parent to confirm against"
	case s.markedGood(parent):
		m, _ := s.byHand(parent)
		return fmt.Sprintf("not confirmed by runs: the parent %.10s is marked good by hand (%s)", parent, m.Reason)
	case s.markedBad(firstBad):
		m, _ := s.byHand(firstBad)
		return fmt.Sprintf("not confirmed by runs: %.10s is marked bad by hand (%s)", firstBad, m.Reason)
	case parent == c.Good && firstBad == c.Bad:
		return fmt.Sprintf("confirmed against its parent %.10s by the endpoints' comparison: %+.1f%% (%s)", parent, 100*cmp.Shift.Est, cmp.Rule)
	}
	return ""
}

// maxHeadToHeads is how many rounds of fresh runs one commit gets: a
// true culprit whose step the first round missed (it has three looks)
// gets a second when the posterior names it again, judged with the first
// round's runs.
const maxHeadToHeads = 2

// headToHead puts the commit x the posterior names against its parent
// before the name stands (Pinpoint's check of a culprit): fresh interleaved
// runs of the two (compare, RoleConfirm), never the runs that made the
// posterior name x (a few runs off their level are what this check is
// for). The step only has to be there, in the direction looked for
// (Config.Changed of stats.Compare at threshold 0): its size was the
// endpoints' question. It reports whether the answer stands; the sentence
// for the answer's why is kept in bayes.confirmed. When the step does not
// show, x is refuted (bayes.refuted) and the search goes on with the new
// runs. When the posterior names a refuted commit again, the runs of the
// two taken since its first round began decide, with a second round of
// fresh runs when they do not show the step; without it then, x stands as
// a range with its parent (bayesEnd). A round that would pass the run
// limit (budget) is not begun: x then stands as a range too. Errors are
// the tool's or the machine's.
func (s *Session) headToHead(ctx context.Context, x string, cmp stats.Comparison, budget int) (bool, error) {
	b := s.bayes
	p := s.parentOf(x)
	if why := s.unconfirmed(x, p, cmp); why != "" {
		delete(b.refuted, x) // a mark given since stands over the runs
		b.confirmed = why
		return true, nil
	}
	d, _ := s.headToHeadDesign(cmp)
	from, again := b.since[x]
	if again {
		if s.sinceShowsStep(x, p, from, d) {
			return true, nil
		}
		if b.rounds[x] >= maxHeadToHeads {
			b.refuted[x] += ", nor did their runs since: the change may be spread over several commits, or earlier runs of these commits were off their level"
			return true, nil
		}
	} else {
		b.since[x] = len(s.trail)
	}
	left := budget - s.runs
	if left < 2*d.Start {
		b.refuted[x] = fmt.Sprintf("could not be put head to head with its parent %.10s within the run limit (%d runs left, %d needed)", p, max(left, 0), 2*d.Start)
		return true, nil
	}
	d.Max = max(d.Start, min(d.Max, left/2))
	b.rounds[x]++
	s.logf("head-to-head %d: %.10s against its parent %.10s, fresh interleaved runs (%s)", b.rounds[x], x, p, d)
	hh, err := s.compare(ctx, p, x, RoleConfirm, d, 0)
	switch {
	case bisect.IsUntestable(err):
		b.refuted[x] = fmt.Sprintf("could not be put head to head with its parent %.10s: %v", p, err)
		return true, nil
	case err != nil:
		return false, err
	case s.changed(hh):
		delete(b.refuted, x)
		b.confirmed = fmt.Sprintf("confirmed against its parent %.10s head to head: %+.1f%% (%s)", p, 100*hh.Shift.Est, hh.Rule)
		return true, nil
	case again && s.sinceShowsStep(x, p, from, d):
		return true, nil
	}
	b.refuted[x] = fmt.Sprintf("showed no step head to head with its parent %.10s (%s, %s)", p, hh.Verdict, hh.Rule)
	s.logf("%.10s was named by the posterior but %s: the search goes on with these runs", x, b.refuted[x])
	return false, nil
}

// sinceShowsStep tests the runs of x and its parent p taken since x's
// first head-to-head began (the from-th run of the trail) at the
// head-to-head's first look's level; when they show the step, x is
// confirmed (bayes.confirmed, a step of RoleConfirm).
func (s *Session) sinceShowsStep(x, p string, from int, d stats.Design) bool {
	taken := stats.Compare(s.trailOf(p, from), s.trailOf(x, from), 0, d.LookAlpha(1))
	if !s.changed(taken) {
		return false
	}
	delete(s.bayes.refuted, x)
	s.step(Step{Role: RoleConfirm, Commit: x, Against: p, Verdict: CompareVerdict(taken.Verdict),
		Reason: "the runs since its head-to-head began: " + taken.Rule, Compare: &taken, Looks: 1})
	s.bayes.confirmed = fmt.Sprintf("confirmed against its parent %.10s by the runs since its head-to-head began: %+.1f%% (%s)", p, 100*taken.Shift.Est, taken.Rule)
	return true
}

// headToHeadDesign plans the head-to-head from the endpoints' comparison as
// Plan plans the classic confirmation (the whole shift against the noise of
// two runs: effect, as for stats.Power), at headToHeadAlpha, with at most
// three looks: a commit that shows no step is not worth a long comparison,
// the search goes on instead.
func (s *Session) headToHeadDesign(cmp stats.Comparison) (d stats.Design, effect float64) {
	effect = math.Abs(math.Log1p(cmp.Shift.Est)) / (cmp.Noise * math.Sqrt2)
	if !(effect > 0) || math.IsInf(effect, 0) {
		effect = 1
	}
	d, _ = stats.Plan(effect, headToHeadAlpha, 2, s.cfg.MaxRepeats)
	d.Max = min(d.Max, d.Start+2*d.Batch)
	return d, effect
}

// trailOf is the usable runs' metric values of commit h from the from-th
// entry of the trail on, in measuring order; with runner hosts, each run
// divided by its host's level (the posterior's, from the host's own
// references): runs of hosts are comparable only so.
func (s *Session) trailOf(h string, from int) []float64 {
	var level func(host int) float64
	if len(s.cfg.Hosts) > 1 && s.bayes != nil {
		lv := s.bayes.model.Levels()
		level = func(host int) float64 { rel, _ := lv.HostLevel(host); return 1 + rel }
	}
	var out []float64
	for _, r := range s.trail[min(from, len(s.trail)):] {
		if r.commit != h {
			continue
		}
		v := r.v
		if level != nil {
			v /= level(r.host)
		}
		out = append(out, v)
	}
	return out
}
