// Command perfbisect finds the commit that made a MySQL-family server slower: it
// builds revisions of the server's source with CMake, starts each as a private
// mysqld with the user's option file, runs a sysbench-compatible OLTP workload
// several times, decides with significance tests whether each revision behaves
// like the good or the bad one, and bisects to the first bad commit.
//
// Exit codes of `start`: 0 first bad commit found, 3 no regression reproduced
// between the endpoints, 4 ambiguous (the answer is a range), 2 usage or
// configuration error, 1 failure of the tool or the machine, 130 interrupted.
// `run` (git bisect run's script) exits 0 good, 1 bad, 125 skip, and 128 or
// more for everything else (see run.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
)

// version is the tool's version, printed by --version.
const version = "0.1.0"

// Exit codes shared by every command (the README's table).
const (
	exitOK           = 0
	exitFailure      = 1
	exitUsage        = 2
	exitNoRegression = 3
	exitAmbiguous    = 4
	exitInconclusive = 3 // compare: UNKNOWN at --max-repeats
	exitRegression   = 5 // compare: a regression beyond --threshold
	exitInterrupted  = 130
)

// exitError carries an exit code with an optional message.
type exitError struct {
	code    int
	err     error
	verdict bool // run's 1 (bad) or 125 (skip): a decision, not a failure
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func main() {
	if code, wrapped := runWrapper(os.Args); wrapped {
		os.Exit(code)
	}
	os.Exit(run(os.Args))
}

// run executes the CLI and returns the process exit code.
func run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	app := newApp()
	err := app.RunContext(ctx, flagsFirst(app, args))
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(os.Stderr, "perfbisect: %v\n", ee.err)
		}
		return ee.code
	}
	if ctx.Err() != nil {
		fmt.Fprintf(os.Stderr, "perfbisect: interrupted: %v\n", err)
		return exitInterrupted
	}
	// Errors from urfave/cli itself (unknown flag, missing required flag) are usage errors.
	fmt.Fprintf(os.Stderr, "perfbisect: %v\n", err)
	return exitUsage
}

func newApp() *cli.App {
	return &cli.App{
		Name:    "perfbisect",
		Version: version,
		Usage:   "find the commit that made a MySQL-family server slower",
		Description: "perfbisect builds revisions of a MariaDB/MySQL/Percona source tree, runs each as a private\n" +
			"mysqld with your option file under a sysbench-compatible workload, decides with significance\n" +
			"tests whether each behaves like the good or the bad revision, and bisects to the first bad commit.",
		Commands:        append([]*cli.Command{startCommand(), runCommand(), compareCommand(), scanCommand(), reportCommand(), benchCommand(), buildCommand()}, append(sessionCommands(), simulateCommand())...),
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {}, // exit codes are mapped in run
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return &exitError{code: exitUsage, err: err}
		},
	}
}
