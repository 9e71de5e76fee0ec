package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/internal/app"
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

// runExitCodes is app.ExitCodes for the process that does run's work (git bisect
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
	if c.NArg() > 0 {
		return usageErr("unexpected argument %q (every input is a flag; see perfbisect run --help)", c.Args().First())
	}
	su, err := newSetup(c)
	if err != nil {
		return err
	}
	defer su.close()
	return app.GitBisectRun(c.Context, su.Setup, app.GitBisectRunRequest{StateDir: c.String("state-dir"), Args: startArgs(c), Out: su.Stdout, Color: su.color()})
}
