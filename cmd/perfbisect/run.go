package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/internal/app"
	"github.com/perfbisect/perfbisect/stats"
)

// Exit codes of `perfbisect run` (git bisect run's protocol): 0 good
// (old), 1 bad (new), 125 skip; anything else is 128 or more, so that git
// aborts the bisection instead of labelling the commit.
const (
	runGood    = 0
	runBad     = 1
	runSkip    = 125
	runUsage   = 128 // usage or configuration error (2 elsewhere)
	runFailure = 129 // failure of the tool or the machine (1 elsewhere)
)

// runExitCodes is exitCodes for the process that does run's work (git bisect
// run's protocol); an outcome it lacks exits runFailure.
var runExitCodes = map[app.Outcome]int{
	app.Done: runGood, app.MarkBad: runBad, app.MarkSkip: runSkip,
	app.Usage: runUsage, app.Failure: runFailure, app.Interrupted: 130,
}

// runChildEnv marks the process that does the work of `perfbisect run`; its
// parent only maps exit codes (see runWrapper).
const runChildEnv = "PERFBISECT_RUN_CHILD"

func runCommand() *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "measure the commit git bisect checked out: the script of git bisect run",
		UsageText: "git bisect start BAD GOOD && git bisect run perfbisect run [--my-cnf FILE] [--workload W] [options]\n\n" +
			"Builds HEAD outside the work tree, measures it in blocks with the bisection's first good and bad\n" +
			"commits (from .git/BISECT_LOG, or refs/bisect/*), and exits 0 (good/old), 1 (bad/new) or\n" +
			"125 (skip: untestable, or undecided at --max-repeats). Anything else exits 128 or more, so that\n" +
			"git stops instead of labelling the commit. The endpoints are measured once per bisection and kept\n" +
			"in the state directory's store.",
		Flags:  measurementFlags(),
		Action: runAction,
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return app.With(app.Usage, errors.New(flagError(c, err)))
		},
	}
}

// runWrapper runs `perfbisect run` in a child process and maps its exit: 0, 1
// and 125 pass; a panic (Go exits 2), any other code below 128, or a death by
// signal become 128 or more. It returns false when this process is the child.
func runWrapper(args []string) (int, bool) {
	if len(args) < 2 || args[1] != "run" || os.Getenv(runChildEnv) != "" {
		return 0, false
	}
	self, err := os.Executable()
	if err != nil {
		printError(err)
		return runFailure, true
	}
	code := wrapRun(self, args[1:])
	for _, a := range args[2:] {
		if (a == "-h" || a == "--help" || a == "-help") && code == runGood {
			// Help is not a verdict: under git bisect run, 0 would mark the commit good.
			return runUsage, true
		}
		if a == "--" {
			break
		}
	}
	return code, true
}

// wrapRun runs exe with args as the child of runWrapper, forwarding SIGINT,
// SIGTERM and SIGHUP, and returns the mapped exit code.
func wrapRun(exe string, args []string) int {
	cmd := exec.Command(exe, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), runChildEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		printError(err)
		return runFailure
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	code := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		code = ee.ExitCode()
	default:
		printError(err)
		return runFailure
	}
	switch {
	case code == runGood, code == runBad, code == runSkip, code >= 128:
		return code
	default:
		fmt.Fprintf(os.Stderr, "perfbisect: run ended with exit code %d (a crash?); exiting %d so that git bisect stops instead of marking the commit\n", code, runUsage)
		return runUsage
	}
}

// runAction is the action of run: the work's outcome, with a plain error
// classified (app.OutcomeOf); main maps it to git bisect run's codes.
func runAction(c *cli.Context) error {
	err := runWork(c)
	var e *app.Error
	switch {
	case err == nil:
		return nil
	case c.Context.Err() != nil:
		return app.With(app.Interrupted, errors.New("interrupted; no server left running"))
	case errors.As(err, &e):
		return err
	default:
		return app.With(app.OutcomeOf(err), err)
	}
}

func runWork(c *cli.Context) error {
	ctx := c.Context
	if c.NArg() > 0 {
		return usageErr("unexpected argument %q (every input is a flag; see perfbisect run --help)", c.Args().First())
	}
	su, err := newSetup(c)
	if err != nil {
		return err
	}
	defer su.close()
	bs, err := app.ReadBisectState(su.Repo)
	if err != nil {
		return err
	}
	head, err := su.Repo.Head()
	if err != nil {
		return usageErr("HEAD of %s: %v", su.RepoRoot, err)
	}
	cand := head.Hash().String()
	good, bad := bs.Endpoints(su.Repo)
	fmt.Fprintf(su.stdout, "perfbisect run: placing %.10s %s between %s %.10s and %s %.10s\n",
		cand, bisect.Subject(su.Repo, cand), bs.TermGood, good, bs.TermBad, bad)
	if err := su.CheckSettings(cand, good, bad); err != nil {
		return err
	}
	commits, err := bisect.Range(su.Repo, good, bad)
	if err != nil {
		if errors.Is(err, bisect.ErrUsage) {
			return app.With(app.Usage, err)
		}
		return err
	}
	cfg := su.Policy
	cfg.Good, cfg.Bad, cfg.Commits = good, bad, commits
	cfg.NoConfirm = true
	if err := cfg.Validate(); err != nil {
		return app.With(app.Usage, err)
	}
	switch cand {
	case good:
		return nil
	case bad:
		return app.Answer(app.MarkBad)
	}
	if err := su.Lock(c.String("state-dir")); err != nil {
		return err
	}
	st := su.Store
	identity := su.Identity(good, bad, map[string]string{"repo": su.RepoRoot})
	k := identity.Key()
	sess, err := st.ByKey(store.KindRun, k)
	if err == nil {
		sess, err = app.EndRunSession(st, sess)
	}
	if err != nil {
		return err
	}
	if sess != nil && sess.State != store.Running {
		sess = nil // that bisection ended: this is a new one
	}
	var events, steps int
	var endpointsDone bool
	var endpoints stats.Comparison // the stored endpoints' comparison, when done
	if sess != nil {
		evs, err := st.Events(sess.ID)
		if err != nil {
			return err
		}
		stored, err := st.Steps(sess.ID)
		if err != nil {
			return err
		}
		events, steps = len(evs), len(stored)
		for _, s := range stored {
			var step session.Step
			if json.Unmarshal(s.Evidence, &step) != nil {
				continue
			}
			if s.Role == string(session.RoleEndpoints) && step.Compare != nil && cfg.Changed(*step.Compare) {
				endpointsDone, endpoints = true, *step.Compare
			}
			if s.Role == string(session.RoleMidpoint) && step.Looks > 0 {
				cfg.Decided++ // a test was made: it spent its share of the error
			}
		}
	} else if sess, err = st.Begin(store.KindRun, startArgs(c), su.RepoRoot, good, bad, identity); err != nil {
		return err
	}
	subjects := func(h string) string { return bisect.Subject(su.Repo, h) }
	table := &report.Table{W: su.stdout, Subjects: subjects, Metric: cfg.Metric, Color: su.color()}
	var res *session.Result
	su.StoreSession(&cfg, func() int64 { return sess.ID }, events, steps, func(s session.Step) { table.Step(s, res.Runs) })
	// git bisect run places one commit per process: the classic per-commit
	// decision (Session.Endpoints, Session.Place) and its error budget.
	cfg.Search = session.SearchClassic
	run, err := session.New(cfg, su.Measurer(func() int64 { return sess.ID }))
	if err != nil {
		return app.With(app.Usage, err)
	}
	res = run.Result()
	if !endpointsDone {
		_, changed, why, err := run.Endpoints(ctx)
		if err != nil {
			var ee *session.EndpointError
			if errors.As(err, &ee) {
				return app.With(app.Usage, err)
			}
			return err
		}
		if !changed {
			return app.With(app.Usage, fmt.Errorf("%s; git bisect cannot place commits between endpoints that do not differ (run git bisect reset)", why))
		}
	} else {
		fmt.Fprintf(su.stdout, "endpoints %.10s and %.10s: differ (measured by an earlier call of this bisection; stored in %s)\n", good, bad, st.Path())
		run.Plan(endpoints)
	}
	mark, step, err := run.Place(ctx, cand)
	if err != nil {
		return err
	}
	term := map[bisect.Mark]string{bisect.Good: bs.TermGood, bisect.Bad: bs.TermBad, bisect.Skip: "skip"}[mark]
	fmt.Fprintf(su.stdout, "perfbisect run: %.10s is %s: %s\n", cand, term, step.Reason)
	switch mark {
	case bisect.Good:
		return nil
	case bisect.Bad:
		return app.Answer(app.MarkBad)
	default:
		return app.Answer(app.MarkSkip)
	}
}
