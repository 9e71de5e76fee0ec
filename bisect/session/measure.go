package session

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
)

// run takes one run of commit: the next stored one when resuming, else a live
// one, recorded. An untestable revision is recorded only with keepFailure: the
// failure of a reference run during a placement stops the session, and a
// resumed session must measure that run again, not replay the failure.
func (s *Session) run(ctx context.Context, commit string, keepFailure bool) (bisect.Run, error) {
	if e, ok := s.replayed(EventRun, commit); ok {
		if e.Run == nil {
			return bisect.Run{}, e.untestable()
		}
		return *e.Run, nil
	}
	var runs []bisect.Run
	var err error
	if len(s.cfg.Hosts) > 1 {
		host := s.cfg.Hosts[s.on]
		runs, err = s.m.(bisect.HostMeasurer).MeasureOn(ctx, host, commit, 1)
		for i := range runs {
			if runs[i].Host == "" {
				runs[i].Host = host // else: it ran elsewhere (RoundPlanner)
			}
		}
	} else {
		runs, err = s.m.Measure(ctx, commit, 1)
	}
	if err != nil {
		if e, ok := untestableEvent(EventRun, commit, err); ok && keepFailure {
			if rerr := s.record(e); rerr != nil {
				return bisect.Run{}, rerr
			}
		}
		return bisect.Run{}, err
	}
	if len(runs) != 1 {
		return bisect.Run{}, fmt.Errorf("measure %.10s: got %d runs, want 1", commit, len(runs))
	}
	r := runs[0]
	if err := s.record(Event{Kind: EventRun, Commit: commit, Run: &r}); err != nil {
		return bisect.Run{}, err
	}
	return r, nil
}

// Attempts at a run before its revision is given up (see measure).
const (
	candidateTries = 2 // a candidate that fails twice in a row is skipped
	referenceTries = 3 // good, bad, a parent: their failure stops the session
)

// triesFor is the number of attempts at a run of a candidate or a reference.
func triesFor(candidate bool) int {
	if candidate {
		return candidateTries
	}
	return referenceTries
}

// measure takes one run of commit and records it in the result; keepFailure
// as for run. A run that fails through the revision (a crash, no
// transactions) is taken again, up to tries attempts, before the revision is
// given up: one server that dies once must not make a commit untestable, nor
// stop the session when it is a reference (which has already run, so it gets
// one more attempt than a candidate).
func (s *Session) measure(ctx context.Context, commit string, keepFailure bool, tries int) (float64, error) {
	for try := 1; ; try++ {
		v, err := s.measureOnce(ctx, commit, keepFailure)
		if err == nil || !bisect.IsUntestable(err) || ctx.Err() != nil || try >= tries {
			return v, err
		}
		s.logf("run of %.10s failed (%v): attempt %d of %d", commit, err, try+1, tries)
		s.res.Retried++
	}
}

func (s *Session) measureOnce(ctx context.Context, commit string, keepFailure bool) (float64, error) {
	s.res.Measured++
	r, err := s.run(ctx, commit, keepFailure)
	if err != nil {
		return 0, err
	}
	s.res.Runs[commit] = append(s.res.Runs[commit], r)
	s.runs++
	s.lastHost = s.hostOf(r)
	if v := s.cfg.Metric.Value(r); v > 0 && !math.IsInf(v, 0) {
		host := s.hostOf(r)
		s.trail = append(s.trail, trailRun{commit, v, host})
		if s.usable == nil {
			s.usable = map[string]int{}
		}
		s.usable[commit]++
		if len(s.cfg.Hosts) > 1 {
			switch commit {
			case s.cfg.Good:
				s.hostRefs[host][0]++
			case s.cfg.Bad:
				s.hostRefs[host][1]++
			default:
				s.hostCands[host]++
			}
		}
	}
	s.wall += r.Wall
	v := s.cfg.Metric.Value(r)
	if !(v > 0) || math.IsInf(v, 0) {
		return 0, &bisect.UntestableError{Commit: commit, Reason: "no transactions",
			Err: fmt.Errorf("%s = %v in a %.1fs window", s.cfg.Metric, v, r.Window.Seconds())}
	}
	return v, nil
}

// hostOf is the index in Config.Hosts of the host that measured r (a
// stored run's Host; the current host when the run names none).
func (s *Session) hostOf(r bisect.Run) int {
	if r.Host != "" {
		for i, h := range s.cfg.Hosts {
			if h == r.Host {
				return i
			}
		}
	}
	return s.on
}

// prepare gets a revision ready before its first run when the Measurer can.
// When resuming, a stored prepare event stands for it (a revision prepared
// before is got ready again by its first live run, from the build cache).
func (s *Session) prepare(ctx context.Context, commit string) error {
	p, ok := s.m.(bisect.Preparer)
	if !ok {
		return nil
	}
	if e, ok := s.replayed(EventPrepare, commit); ok {
		s.prepared(e.Took)
		return e.untestable()
	}
	start := time.Now()
	err := p.Prepare(ctx, commit)
	took := time.Since(start)
	s.prepared(took)
	e, ok := untestableEvent(EventPrepare, commit, err)
	e.Took = took
	switch {
	case err == nil:
		return s.record(Event{Kind: EventPrepare, Commit: commit, Took: took})
	case ok:
		if rerr := s.record(e); rerr != nil {
			return rerr
		}
	}
	return err
}
