package session

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/posterior"
	"github.com/perfbisect/perfbisect/stats"
	"gonum.org/v1/gonum/stat/distuv"
)

// Search strategies (Config.Search).
const (
	SearchBayes   = "bayes"   // probabilistic bisection: every run updates a posterior over the first bad commit
	SearchClassic = "classic" // one sequential decision per midpoint, then the confirmation against the parent
)

// Probabilistic search policy.
const (
	// BayesEndpointRuns is the default --max-repeats of a probabilistic
	// search: the endpoints' run limit per side. Their comparison only says
	// whether there is a change to look for, and every one of its runs also
	// sets the levels the search uses, so a change of one noise unit must
	// get through it.
	BayesEndpointRuns = 100
	// candidatesPerReference is how many candidate runs come between two
	// reference runs (good and bad in turn): enough references to follow the
	// machine's drift and keep the levels estimated, most runs on candidates.
	candidatesPerReference = 2
	// refsPerCandidateRun: the fewer reference side keeps at least this many
	// runs per run of the candidate measured next.
	refsPerCandidateRun = 1
	// minRuns is the fewest runs the first bad commit and the commit below it
	// must have before the posterior's answer stands: one run of a hiccup must
	// never name a commit alone.
	minRuns = 2
	// bracketRefs is how many reference runs must follow the middle of the
	// boundary commits' runs before the answer stands: a step of the
	// machine's speed while they ran must be visible in the references
	// after them (posterior's step detection needs 8 a side), not only
	// before.
	bracketRefs = 8
	// defaultBuildRuns is the cost of a build in runs until one is timed.
	defaultBuildRuns = 10
)

// Posterior is one candidate in a probabilistic search's answer.
type Posterior struct {
	Commit string
	// First is the posterior probability that the commit is the first bad
	// commit; Bad that it is bad (the first bad commit is it or an ancestor).
	First, Bad float64
	// Position is where its runs sit between the good level (0) and the bad
	// one (1), with a 95% interval [Lo, Hi]; NaN without runs.
	Position, Lo, Hi float64
	Runs             int
}

// bayes is a probabilistic search in progress.
type bayes struct {
	model    *posterior.Model
	fed      int // entries of Session.trail given to the model
	prepared map[string]bool
	// confirmed is how the named commit was put head to head with its
	// parent (headToHead), for the answer's why; refuted holds the commits
	// the posterior named that did not pass, and why.
	confirmed string
	refuted   map[string]string
	since     map[string]int // where in Session.trail a commit's head-to-head began
	rounds    map[string]int // rounds of fresh runs a commit's head-to-head took
}

// BudgetRuns is the run limit of a probabilistic search that sets none: six
// times the pre-flight estimate, at least 400 and at most 4000.
func BudgetRuns(estimate int) int { return min(max(6*estimate, 400), 4000) }

// bayesSearch runs the probabilistic search after endpoints that differ (cmp):
// it fills the result and returns errors of the tool or the machine (and a
// reference that fails).
func (s *Session) bayesSearch(ctx context.Context, cmp stats.Comparison) error {
	c := s.cfg
	model, err := posterior.New(c.Commits, c.Good, c.Bad, bisect.Options{FirstParent: c.FirstParent})
	if err != nil {
		return err
	}
	model.SetBuildEffect(c.BuildEffect)
	b := &bayes{model: model, prepared: map[string]bool{c.Good: true, c.Bad: true}, refuted: map[string]string{}, since: map[string]int{}, rounds: map[string]int{}}
	s.bayes = b
	s.feed()
	est := s.bayesEstimate(cmp)
	budget := c.MaxRuns
	if budget == 0 {
		// Runner hosts spend their runs side by side, each on its own
		// references too: the limit is one host's, per host.
		budget = BudgetRuns(est) * max(len(c.Hosts), 1)
	}
	s.logf("probabilistic search: %s; at most %d runs", plural(len(model.Candidates()), "candidate"), budget)
	jobs := max(c.Jobs, 1)
	sinceRef, nextRef := 0, false
	for {
		s.applyMarks()
		ans := model.Answer(s.posteriorLevel())
		var missing string
		forceRef := false
		if ans.Done {
			missing = s.missingEvidence(ans)
			forceRef = missing == "" && s.refsAfter(ans) < bracketRefs
			if missing == "" && !forceRef {
				stands := true
				if len(ans.Commits) == 1 {
					if stands, err = s.headToHead(ctx, ans.Commits[0], cmp, budget); err != nil {
						return err
					}
				}
				if stands {
					return s.bayesEnd(ans, true)
				}
				s.feed()
				continue
			}
		}
		if s.runs >= budget {
			s.logf("run limit %d reached", budget)
			return s.bayesEnd(ans, false)
		}
		pts := model.NextK(jobs, posterior.Cost{Built: func(h string) bool { return b.prepared[h] }, BuildRuns: s.buildRuns()})
		if missing != "" {
			pts = []string{missing} // the answer's boundary, measured on both sides
		}
		if len(pts) == 0 {
			s.logf("no candidate left to measure")
			return s.bayesEnd(model.Answer(s.posteriorLevel()), false)
		}
		if len(c.Hosts) > 1 {
			if missing == "" {
				// The single best commit first (Horstein's median), then
				// the quantiles of a round over the hosts (Jobs is the
				// hosts' number here).
				cost := posterior.Cost{Built: func(h string) bool { return b.prepared[h] }, BuildRuns: s.buildRuns()}
				pts = append(model.NextK(1, cost), model.NextK(len(c.Hosts), cost)...)
				if len(pts) == 0 {
					s.logf("no candidate left to measure")
					return s.bayesEnd(model.Answer(s.posteriorLevel()), false)
				}
			}
			if err := s.hostRound(ctx, pts, forceRef); err != nil {
				return err
			}
			continue
		}
		// A reference run every candidatesPerReference candidate runs (the
		// drift), and whenever the fewer side has fewer runs than the
		// candidate about to run: the levels' error is shared by all of a
		// commit's runs, so a commit's evidence can never outgrow the
		// references'.
		nref := min(s.usable[c.Good], s.usable[c.Bad])
		if forceRef || sinceRef >= candidatesPerReference || nref < refsPerCandidateRun*s.usable[pts[0]] {
			ref := c.Good
			if s.usable[c.Bad] < s.usable[c.Good] || s.usable[c.Bad] == s.usable[c.Good] && nextRef {
				ref = c.Bad
			}
			nextRef = !nextRef
			if _, err := s.measure(ctx, ref, false, referenceTries); err != nil {
				if bisect.IsUntestable(err) {
					return fmt.Errorf("reference %.10s failed during the search: %w", ref, err)
				}
				return err
			}
			s.feed()
			sinceRef = 0
			continue
		}
		for _, h := range pts {
			ok, err := s.runCandidate(ctx, h)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			s.feed()
			sinceRef++
		}
	}
}

// hostRound gives every host of Config.Hosts one run: a reference it
// needs (hostRef), else the next of the commits placed (pts: the best
// commit, then NextK over the hosts; or the commit the answer misses),
// then feeds the model. The hosts' order is fixed, so a resumed session
// asks for the same runs in the same order.
func (s *Session) hostRound(ctx context.Context, pts []string, forceRef bool) error {
	// Commits whose side is all but known tell little: when the posterior
	// has narrowed, the hosts share the commits still in doubt, a commit
	// on several hosts at once, rather than spread to settled ones.
	bad := map[string]float64{}
	points, _, _, _ := s.bayes.model.Posterior()
	for _, p := range points {
		bad[p.Commit] = p.Bad
	}
	doubt := slices.DeleteFunc(slices.Clone(pts[1:]), func(h string) bool { return bad[h] < 0.1 || bad[h] > 0.9 || h == pts[0] })
	doubt = append(pts[:1:1], doubt...)
	defer func() { s.on = 0 }()
	if p, ok := s.m.(bisect.RoundPlanner); ok && s.replayDone() {
		p.PlanRound(ctx, s.roundPlan(doubt, forceRef))
	}
	next := 0
	for i := range s.cfg.Hosts {
		s.on = i
		if ref := s.hostRef(i, forceRef); ref != "" {
			if _, err := s.measure(ctx, ref, false, referenceTries); err != nil {
				if bisect.IsUntestable(err) {
					return fmt.Errorf("reference %.10s failed on host %s during the search: %w", ref, s.cfg.Hosts[i], err)
				}
				return err
			}
			continue
		}
		for tries := 0; tries < len(doubt); tries++ {
			h := doubt[next%len(doubt)]
			next++
			if s.res.Verdicts[h] == bisect.Skip.String() {
				continue // found untestable this round
			}
			ok, err := s.runCandidate(ctx, h)
			if err != nil {
				return err
			}
			if ok {
				break
			}
		}
	}
	if r, ok := s.m.(bisect.RoundEnder); ok {
		r.EndRound()
	}
	s.feed()
	return nil
}

// roundPlan is the run every host takes in hostRound's loop when every
// candidate is testable: its reference, else the next commit in doubt
// that is not skipped.
func (s *Session) roundPlan(doubt []string, forceRef bool) []bisect.HostRun {
	var out []bisect.HostRun
	next := 0
	for i, host := range s.cfg.Hosts {
		if ref := s.hostRef(i, forceRef); ref != "" {
			out = append(out, bisect.HostRun{Host: host, Commit: ref})
			continue
		}
		for tries := 0; tries < len(doubt); tries++ {
			h := doubt[next%len(doubt)]
			next++
			if s.res.Verdicts[h] != bisect.Skip.String() {
				out = append(out, bisect.HostRun{Host: host, Commit: h})
				break
			}
		}
	}
	return out
}

// hostRef is the reference host i must run before its next candidate, or
// "": two of each side before its first candidate (its level is not known
// before), then one every candidatesPerReference candidate runs, the side
// with fewer runs there (good on a tie); force asks for one now.
func (s *Session) hostRef(i int, force bool) string {
	g, b := s.hostRefs[i][0], s.hostRefs[i][1]
	fewer := s.cfg.Good
	if b < g {
		fewer = s.cfg.Bad
	}
	if force || min(g, b) < 2 || g+b < 4+s.hostCands[i]/candidatesPerReference {
		return fewer
	}
	return ""
}

// runCandidate prepares h when it is not yet, and takes one run of it. It
// reports false when h turned out untestable (recorded as such), and returns
// errors of the tool or the machine.
func (s *Session) runCandidate(ctx context.Context, h string) (bool, error) {
	err := error(nil)
	if !s.bayes.prepared[h] {
		err = s.prepare(ctx, h)
		s.bayes.prepared[h] = true
	}
	if err == nil {
		_, err = s.measure(ctx, h, true, candidateTries)
	}
	var u *bisect.UntestableError
	switch {
	case errors.As(err, &u):
		s.bayesUntestable(h, u)
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// posteriorLevel is the posterior probability the answer needs: the
// posterior's share of the error is half of 1 - confidence (the endpoints'
// comparison has the other half), so the whole answer is right with
// probability at least the confidence.
func (s *Session) posteriorLevel() float64 { return 1 - s.budget.StepAlpha() }

// prepared counts a prepare's time (stored or live) for buildRuns.
func (s *Session) prepared(took time.Duration) {
	s.builds++
	s.building += took
}

// buildRuns is the cost of a build in runs: Config.BuildRuns, else the
// builds timed so far over the time per run, else defaultBuildRuns.
func (s *Session) buildRuns() float64 {
	if s.cfg.BuildRuns > 0 {
		return s.cfg.BuildRuns
	}
	if s.builds == 0 || s.runs == 0 || s.wall <= 0 {
		return defaultBuildRuns
	}
	return (s.building.Seconds() / float64(s.builds)) / (s.wall.Seconds() / float64(s.runs))
}

// feed gives the model the runs measured since the last call, in order.
func (s *Session) feed() {
	b := s.bayes
	for ; b.fed < len(s.trail); b.fed++ {
		r := s.trail[b.fed]
		v := math.Log(r.v)
		switch r.commit {
		case s.cfg.Good:
			b.model.ObserveReferenceOn(r.host, false, v)
		case s.cfg.Bad:
			b.model.ObserveReferenceOn(r.host, true, v)
		default:
			_ = b.model.ObserveOn(r.host, r.commit, v) // only candidates are measured
		}
	}
}

// bayesUntestable records a candidate that cannot be measured.
func (s *Session) bayesUntestable(h string, u *bisect.UntestableError) {
	s.bayes.model.Untestable(h)
	why := u.Reason
	if u.Err != nil {
		why += ": " + u.Err.Error()
	}
	s.res.Skipped[h] = why
	s.res.Verdicts[h] = bisect.Skip.String()
	s.logf("%.10s untestable: %s", h, why)
}

// missingEvidence returns the commit that must be run before the
// posterior's answer stands, or "" when it stands: the answer's newest commit
// (the first bad commit) needs minRuns runs of its own, and each parent of
// the answer's commits minRuns runs of one commit that carries the parent's
// change and not the culprit's (the parent itself, or a descendant of it
// beside the culprit). The boundary is measured on both sides, and no single
// run carries it. The good revision needs none; an untestable parent cannot
// be run (the answer is then a range that holds it).
func (s *Session) missingEvidence(ans posterior.Answer) string {
	if len(ans.Commits) == 0 {
		return ""
	}
	model := s.bayes.model
	top := ans.Commits[0]
	if top != s.cfg.Bad && !s.evident(top) && s.res.Skipped[top] == "" {
		return top
	}
	in := map[string]bool{}
	for _, h := range ans.Commits {
		in[h] = true
	}
	for _, h := range ans.Commits {
		for _, p := range s.parentsOf(h) {
			if in[p] || !model.Contains(p, p) || s.res.Skipped[p] != "" {
				continue // inside the answer, not a candidate (good or its ancestors), or untestable
			}
			ok := false
			for _, x := range model.Candidates() {
				if s.evident(x) && model.Contains(x, p) && !model.Contains(x, top) {
					ok = true
					break
				}
			}
			if !ok {
				return p
			}
		}
	}
	return ""
}

// refsAfter is the fewest reference runs measured after the median run of
// any one of the answer's commits and their parents (the boundary), in
// measuring order: each side of the boundary needs references after its own
// runs, or a step while it ran would not show.
func (s *Session) refsAfter(ans posterior.Answer) int {
	in := map[string]bool{}
	for _, h := range ans.Commits {
		in[h] = true
		for _, p := range s.parentsOf(h) {
			in[p] = true
		}
	}
	delete(in, s.cfg.Good)
	delete(in, s.cfg.Bad)
	at := map[string][]int{}
	for i, r := range s.trail {
		if in[r.commit] {
			at[r.commit] = append(at[r.commit], i)
		}
	}
	fewest := bracketRefs // the endpoints alone: their comparison is the evidence
	for _, ix := range at {
		n := 0
		for _, r := range s.trail[ix[len(ix)/2]+1:] {
			if r.commit == s.cfg.Good || r.commit == s.cfg.Bad {
				n++
			}
		}
		fewest = min(fewest, n)
	}
	return fewest
}

// evident reports whether candidate h stands on its own evidence: minRuns
// runs, or a good or bad mark by hand.
func (s *Session) evident(h string) bool {
	if m, ok := s.byHand(h); ok && m.Mark != bisect.Skip {
		return true
	}
	return s.usable[h] >= minRuns
}

func (s *Session) parentsOf(h string) []string {
	for _, c := range s.cfg.Commits {
		if c.Hash == h {
			if s.cfg.FirstParent && len(c.Parents) > 1 {
				return c.Parents[:1]
			}
			return c.Parents
		}
	}
	return nil
}

// bayesEnd sets the result from the posterior's answer: Found when one commit
// holds the confidence (done), Ambiguous with the range otherwise; one step
// per measured commit gives its posterior and the verdict the posterior
// takes at the confidence.
func (s *Session) bayesEnd(ans posterior.Answer, done bool) error {
	c := s.cfg
	w := s.words()
	pts, lv, pNone, pSplit := s.bayes.model.Posterior()
	s.res.Posterior = nil
	for _, p := range pts {
		s.res.Posterior = append(s.res.Posterior, Posterior{Commit: p.Commit, First: p.First, Bad: p.Bad,
			Position: p.Position, Lo: p.Lo, Hi: p.Hi, Runs: p.Runs})
	}
	for i := len(pts) - 1; i >= 0; i-- { // oldest first
		p := pts[i]
		if _, hand := s.byHand(p.Commit); p.Commit == c.Bad || p.Runs == 0 || hand {
			continue // a hand mark has its step
		}
		// The verdict the posterior takes at the confidence; a commit it
		// leaves in doubt is a skip for git (git bisect replay of the log
		// then arrives where the posterior did).
		verdict := VerdictSkip
		switch {
		case p.Bad >= c.Confidence:
			verdict = VerdictBad
		case 1-p.Bad >= c.Confidence:
			verdict = VerdictGood
		case s.res.Skipped[p.Commit] == "":
			s.res.Skipped[p.Commit] = fmt.Sprintf("left undecided by the posterior: P(bad) %.3g after %s", p.Bad, runsN(p.Runs))
		}
		s.res.Verdicts[p.Commit] = string(verdict)
		s.step(Step{Role: RoleMidpoint, Commit: p.Commit, Against: c.Good, Verdict: verdict,
			Reason: fmt.Sprintf("posterior: P(%s) %.3g, P(%s) %.3g; position %.2f [%.2f, %.2f] between %s and %s over %s",
				w.bad, p.Bad, w.first, p.First, p.Position, p.Lo, p.Hi, w.good, w.bad, runsN(p.Runs)),
			Looks: p.Runs})
	}
	steps := "no step of the machine's speed"
	if len(lv.Steps) > 0 {
		steps = fmt.Sprintf("the machine's speed stepped at runs %v", lv.Steps)
	}
	levels := fmt.Sprintf("%s; levels: %s-%s shift %+.1f%% at %.1f%% noise per run (%.1f noise units) over %d %s and %d %s runs; P(no culprit in the range) %.2g, P(split over two commits) %.2g",
		steps, w.good, w.bad, 100*lv.Shift(), 100*lv.Scale, lv.Effect(), lv.NGood, w.good, lv.NBad, w.bad, pNone, pSplit)
	if lv.Hosts() > 1 {
		// A regression whose size differs by host shows here.
		var per []string
		for i, h := range c.Hosts {
			if v := lv.HostShift(i); !math.IsNaN(v) {
				per = append(per, fmt.Sprintf("%s %+.1f%%", h, 100*v))
			}
		}
		levels += "; " + w.good + "-" + w.bad + " shift per host: " + strings.Join(per, ", ")
	}
	s.logf("%s", levels)
	switch {
	case done && len(ans.Commits) == 1 && s.bayes.refuted[ans.Commits[0]] != "":
		x := ans.Commits[0]
		s.res.Outcome, s.res.Range = Ambiguous, []string{x}
		if p := s.parentOf(x); p != "" && s.bayes.model.Contains(p, p) && !s.markedGood(p) {
			s.res.Range = append(s.res.Range, p) // a candidate: not the good revision, not one marked good
		}
		s.res.Why = fmt.Sprintf("the posterior names %.10s (probability %.4g), but it %s; %s",
			x, ans.Mass, s.bayes.refuted[x], levels)
	case done && len(ans.Commits) == 1:
		s.res.Outcome, s.res.FirstBad = Found, ans.Commits[0]
		s.res.Why = fmt.Sprintf("%s with posterior probability %.4g (confidence %g); %s; %s", w.first, ans.Mass, c.Confidence, s.bayes.confirmed, levels)
	case done:
		s.res.Outcome, s.res.Range = Ambiguous, ans.Commits
		s.res.Why = fmt.Sprintf("untestable commits border the %s: it is one of %d commits (posterior probability %.4g); %s", w.first, len(ans.Commits), ans.Mass, levels)
	default:
		s.res.Outcome, s.res.Range = Ambiguous, ans.Commits
		s.res.Why = fmt.Sprintf("the run limit came first: the %s is one of these %d commits with posterior probability %.3g; %s", w.first, len(ans.Commits), ans.Mass, levels)
	}
	return nil
}

// bayesEstimate is the probabilistic search's pre-flight estimate from the
// endpoints' comparison: the information needed (the log of the candidates
// and of the error allowed, in nats) over the information of one run at the
// posterior median (posterior's binary channel at the measured effect), plus
// the references between candidate runs and the runs taken so far. It sets
// Result.Estimate and EstimatedRuns and returns the estimate.
func (s *Session) bayesEstimate(cmp stats.Comparison) int {
	shift := math.Abs(math.Log1p(cmp.Shift.Est))
	noise := cmp.Noise
	n := len(s.bayes.model.Candidates())
	if n <= 1 { // bad alone: the endpoints' comparison was the whole search
		s.res.EstimatedRuns = s.runs
		s.res.Estimate = fmt.Sprintf("good-bad shift %+.1f%% with %.1f%% noise per run: bad is the only commit after good, nothing more to measure", 100*cmp.Shift.Est, 100*noise)
		s.logf("estimate: %s", s.res.Estimate)
		if s.cfg.Hooks.OnEstimate != nil {
			s.cfg.Hooks.OnEstimate(s.runs)
		}
		return s.runs
	}
	if !(noise > 0) || shift == 0 || math.IsNaN(shift) {
		return s.runs + 10*n
	}
	effect := shift / noise
	need := math.Log(float64(max(n, 2))) + math.Log(1/(1-s.cfg.Confidence)) + 1
	// at is the runs on candidates, and in all, at a noise per run.
	at := func(noise float64) (cand, runs float64) {
		effect := shift / noise
		cand = need / posterior.Information(effect) * estimateFactor(effect)
		return cand, cand * (1 + 1.0/candidatesPerReference)
	}
	perRun := posterior.Information(effect)
	cand, runs := at(noise)
	// The head-to-head before the answer: its first round of fresh runs of
	// both sides.
	confirm := 0.0
	if !s.cfg.NoConfirm {
		d, full := s.headToHeadDesign(cmp)
		confirm = math.Ceil(2 * stats.ExpectedN(full, d))
	}
	runs += confirm
	est := s.runs + int(math.Ceil(runs))
	// The upper figure: the noise at the top of its 90% interval, and the
	// spread of sessions around their estimate, which grows as the effect
	// shrinks (the 90th percentile of spent / that figure in simulated
	// sessions: about 1 + 3/effect; see
	// docs/statistics.md).
	_, runsHigh := at(noise * NoiseUpper(cmp.NOld+cmp.NNew-2))
	runsHigh = runsHigh*(1+3/effect) + confirm
	builds := math.Ceil(math.Log2(float64(max(n, 2)))) + 2
	var per time.Duration
	if s.runs > 0 {
		per = s.wall / time.Duration(s.runs)
	}
	runs, runsHigh = math.Ceil(runs), math.Ceil(runsHigh) // as EstimatedRuns counts them
	s.res.EstimatedRuns, s.res.EstimatedRunsHigh = est, s.runs+int(runsHigh)
	s.res.Estimate = fmt.Sprintf("good-bad shift %+.1f%% with %.1f%% noise per run (%.2g noise units): one run at the posterior median gives %.2f bits; about %.0f more runs (%.0f on candidates, %.0f head to head; up to about %.0f in 9 sessions of 10, the noise of %d runs being rough) and %.0f builds, %s at %.1fs per run (plus builds)",
		100*cmp.Shift.Est, 100*noise, effect, perRun/math.Ln2, runs, cand, confirm, runsHigh, cmp.NOld+cmp.NNew, builds, (time.Duration(runs) * per).Round(time.Second), per.Seconds())
	limit := s.cfg.MaxRuns
	if limit == 0 {
		limit = BudgetRuns(0) // the least run limit a session gets
	}
	if sm := SmallestChange(noise, n, s.cfg.Confidence, limit-s.runs); sm > 0 {
		s.res.SmallestChange, s.res.SmallestChangeRuns = sm, limit
		s.res.Estimate += fmt.Sprintf("; the smallest change this machine resolves here within %d runs (in 9 sessions of 10): %.1f%% (%.2g noise units)",
			limit, 100*sm, math.Log1p(sm)/noise)
	}
	if effect < 0.5 {
		s.res.Advice = fmt.Sprintf("the shift is under half the noise of one run: the search will take many runs. A longer %s (noise falls about with the square root of the window), %s cpu-per-txn (steadier than tps) or CPU pinning would make it cheaper",
			s.cfg.setting("time"), s.cfg.setting("metric"))
		s.res.Estimate += "; " + s.res.Advice
	}
	s.logf("estimate: %s", s.res.Estimate)
	if s.cfg.Hooks.OnEstimate != nil {
		s.cfg.Hooks.OnEstimate(est)
	}
	return est
}

// NoiseUpper is the factor from a noise estimate with df degrees of freedom
// (runs of both sides less two) to the top of its one-sided 90% interval:
// sqrt(df / chi2(0.10; df)), the chi-square interval of a normal sample's
// standard deviation (1.43 at df 10, 1.20 at 34). df below 1 gives 2. The
// session's noise is a robust (MAD-based) estimate, less efficient than a
// standard deviation, so its own interval is wider: the pre-flight's upper
// figure is calibrated on simulated sessions with this factor in it (the
// 1 + 3/effect term), not an exact 90% bound on the noise.
func NoiseUpper(df int) float64 {
	if df < 1 {
		return 2
	}
	return math.Sqrt(float64(df) / distuv.ChiSquared{K: float64(df)}.Quantile(0.10))
}

// SmallestChange is the smallest relative change (0.05: 5%, either
// direction) that a probabilistic search over n candidates, at noise per run
// (the standard deviation of a run's log value, 0.03 for 3%) and confidence,
// names within runs runs (candidates and references) in about nine sessions
// of ten: by the count of the pre-flight estimate (bayesEstimate: the
// information needed over the information one run at the posterior median
// gives, Horstein 1963; Ben-Or & Hassidim 2008, times estimateFactor), with
// runSpread for the sessions that need more than the mean. It returns 0
// when noise is not positive or runs cannot name even a change of 20 noise
// units.
func SmallestChange(noise float64, n int, confidence float64, runs int) float64 {
	if !(noise > 0) || runs <= 0 || !(confidence > 0 && confidence < 1) {
		return 0
	}
	need := math.Log(float64(max(n, 2))) + math.Log(1/(1-confidence)) + 1
	enough := func(e float64) bool { // runs suffice at an effect of e noise units
		return need/posterior.Information(e)*estimateFactor(e)*(1+1.0/candidatesPerReference)*runSpread <= float64(runs)
	}
	lo, hi := 0.0, 20.0 // noise units; the runs needed fall as the effect grows
	if !enough(hi) {
		return 0
	}
	for range 60 {
		mid := (lo + hi) / 2
		if enough(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return math.Expm1(hi * noise)
}

// runSpread is about the 90th percentile of a session's runs over the
// estimate's mean: with it, at the change SmallestChange gives for 400 runs
// at 3% noise over 40 commits (3.8%), 22 of 24 simulated sessions limited to
// 400 runs named the culprit (TestSmallestChangeIsResolved); with 1.8, 17.
const runSpread = 2.2

// estimateFactor is how many times the runs the information count gives
// (need / Information) a search spends at an effect of effect noise units,
// fitted to simulated sessions: the count alone is near right for large
// effects and too low for small ones, where the levels' own error and the
// heavy-tailed likelihood take information from every run. Runs spent over
// the count alone ("runs spent / pre-flight estimate" of `perfbisect simulate
// --sessions 100 --culprit-pos random --cv 3 --threshold 1 --seed 5 --change
// C` before the factor): 2.55 at -3% (1 noise unit), 1.56 at -4%, 1.41 at
// -5%, 1.27 at -7%, 1.15 at -15%, 0.94 at -25%; with it (seed 9): 1.01 at
// -3%, 1.07 at -4%, 1.13 at -5%, and 0.90 at -8% with 7% noise over 8
// commits.
func estimateFactor(effect float64) float64 {
	return min(1.35+2.2*math.Pow(effect, -4.6), 10)
}

// terms are git bisect's words for a session: good/bad, or old/new when it
// looks for an improvement.
type terms struct{ good, bad, first string }

func (s *Session) words() terms {
	if s.cfg.Improvement {
		return terms{"old", "new", "first new commit"}
	}
	return terms{"good", "bad", "first bad commit"}
}

// plural is "1 candidate", "7 candidates".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// runsN is "1 run", "9 runs".
func runsN(n int) string { return plural(n, "run") }
