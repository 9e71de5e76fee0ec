package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/stats"
)

// GitBisectRunRequest is one call of `perfbisect run` under git bisect run: where
// the state is (StateDir, "" for the repository's default), the command as
// typed (stored with the session), and where the placement is said (Out,
// Color).
type GitBisectRunRequest struct {
	StateDir string
	Args     []string
	Out      io.Writer
	Color    bool
}

// GitBisectRun decides whether the commit git bisect checked out (HEAD) is good or
// bad: it measures it in blocks against the endpoints of git's bisection
// (measured once per bisection and stored: a later call reuses them), with
// the classic per-commit decision and its share of the error budget. It
// returns the verdict as an error: nil (good), Answer(MarkBad),
// Answer(MarkSkip) (untestable, or undecided at the repeat limit), a usage
// error (not bisecting, endpoints that do not differ or cannot be measured),
// or a failure.
func GitBisectRun(ctx context.Context, su *Setup, req GitBisectRunRequest) error {
	bs, err := ReadBisectState(su.Repo)
	if err != nil {
		return err
	}
	head, err := su.Repo.Head()
	if err != nil {
		return bisect.Usagef("HEAD of %s: %v", su.RepoRoot, err)
	}
	cand := head.Hash().String()
	good, bad := bs.Endpoints(su.Repo)
	fmt.Fprintf(req.Out, "perfbisect run: placing %.10s %s between %s %.10s and %s %.10s\n",
		cand, bisect.Subject(su.Repo, cand), bs.TermGood, good, bs.TermBad, bad)
	if err := su.CheckSettings(cand, good, bad); err != nil {
		return err
	}
	commits, err := bisect.Range(su.Repo, good, bad)
	if err != nil {
		if errors.Is(err, bisect.ErrUsage) {
			return With(Usage, err)
		}
		return err
	}
	cfg := su.Policy
	cfg.Good, cfg.Bad, cfg.Commits = good, bad, commits
	cfg.NoConfirm = true
	if err := cfg.Validate(); err != nil {
		return With(Usage, err)
	}
	switch cand {
	case good:
		return nil
	case bad:
		return Answer(MarkBad)
	}
	if err := su.Lock(req.StateDir); err != nil {
		return err
	}
	ps, err := runSessionOf(su, &cfg, good, bad, req.Args)
	if err != nil {
		return err
	}
	st, sess := su.Store, ps.sess
	subjects := func(h string) string { return bisect.Subject(su.Repo, h) }
	table := &report.Table{W: req.Out, Subjects: subjects, Metric: cfg.Metric, Color: req.Color}
	var res *session.Result
	su.StoreSession(&cfg, func() int64 { return sess.ID }, ps.events, ps.steps, func(s session.Step) { table.Step(s, res.Runs) })
	// git bisect run places one commit per process: the classic per-commit
	// decision (Session.Endpoints, Session.Place) and its error budget.
	cfg.Search = session.SearchClassic
	run, err := session.New(cfg, su.Measurer(func() int64 { return sess.ID }))
	if err != nil {
		return With(Usage, err)
	}
	res = run.Result()
	if !ps.endpointsDone {
		_, changed, why, err := run.Endpoints(ctx)
		if err != nil {
			var ee *session.EndpointError
			if errors.As(err, &ee) {
				return With(Usage, err)
			}
			return err
		}
		if !changed {
			return With(Usage, fmt.Errorf("%s; git bisect cannot place commits between endpoints that do not differ (run git bisect reset)", why))
		}
	} else {
		fmt.Fprintf(req.Out, "endpoints %.10s and %.10s: differ (measured by an earlier call of this bisection; stored in %s)\n", good, bad, st.Path())
		run.Plan(ps.endpoints)
	}
	mark, step, err := run.Place(ctx, cand)
	if err != nil {
		return err
	}
	term := map[bisect.Mark]string{bisect.Good: bs.TermGood, bisect.Bad: bs.TermBad, bisect.Skip: "skip"}[mark]
	fmt.Fprintf(req.Out, "perfbisect run: %.10s is %s: %s\n", cand, term, step.Reason)
	switch mark {
	case bisect.Good:
		return nil
	case bisect.Bad:
		return Answer(MarkBad)
	default:
		return Answer(MarkSkip)
	}
}

// placeState is what a bisection's earlier calls of GitBisectRun stored: its
// session, how many events and steps it holds, and the endpoints'
// comparison when they were measured.
type placeState struct {
	sess          *store.Session
	events, steps int
	endpointsDone bool
	endpoints     stats.Comparison
}

// runSessionOf returns the running `perfbisect run` session of this
// bisection (its identity: the endpoints, the settings, the repository),
// begun when there is none or the stored one has ended; the midpoint
// decisions already made count in cfg.Decided (each spent its share of the
// error budget).
func runSessionOf(su *Setup, cfg *session.Config, good, bad string, args []string) (placeState, error) {
	var ps placeState
	st := su.Store
	if su.Build.LayoutsAuto && su.Build.Layouts != 1 {
		// A session begun before code layouts were the default has the
		// build's own layout in its identity.
		chosen := su.Build.Layouts
		su.Build.Layouts = 1
		old, err := st.ByKey(store.KindRun, runIdentity(su, good, bad).Key())
		su.Build.Layouts = chosen
		if err == nil && old != nil && old.State == store.Running {
			su.layoutsAsBegun(old.Identity())
		}
	}
	identity := runIdentity(su, good, bad)
	k := identity.Key()
	sess, err := st.ByKey(store.KindRun, k)
	if err == nil {
		sess, err = EndRunSession(st, sess)
	}
	if err != nil {
		return ps, err
	}
	if sess != nil && sess.State != store.Running {
		sess = nil // that bisection ended: this is a new one
	}
	if sess != nil {
		evs, err := st.Events(sess.ID)
		if err != nil {
			return ps, err
		}
		stored, err := st.Decisions(sess.ID)
		if err != nil {
			return ps, err
		}
		ps.events, ps.steps = len(evs), len(stored)
		for _, step := range stored {
			if step.Role == session.RoleEndpoints && step.Compare != nil && cfg.Changed(*step.Compare) {
				ps.endpointsDone, ps.endpoints = true, *step.Compare
			}
			if step.Role == session.RoleMidpoint && step.Looks > 0 {
				cfg.Decided++ // a test was made: it spent its share of the error
			}
		}
	} else if sess, err = su.Begin(store.KindRun, args, su.RepoRoot, good, bad, identity); err != nil {
		return ps, err
	}
	ps.sess = sess
	return ps, nil
}
