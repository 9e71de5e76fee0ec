// Package app is perfbisect's application layer, between the command line
// (cmd/perfbisect: flags in, text and exit codes out) and the packages that do
// the work (bisect, bisect/session, bisect/store, build, serverctl, bench):
// what a command does, given checked settings (Setup; Start, Compare, Scan,
// GitBisectRun for git bisect run, Bench, BuildRevisions), the state directory
// (MakeStateDir, FindStateDir, Where, LockAndReap), the stored sessions that
// status, log, report and reset read (Stored, RenderStored, Reset), git's own
// bisection that `perfbisect run` works inside (ReadBisectState,
// EndRunSession), and how a command ended (Outcome). docs/architecture.md
// shows where it sits.
package app

import (
	"errors"
	"fmt"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/serverctl"
)

// Outcome is how a command ended, in the terms a caller acts on (a shell
// script, a CI job, git bisect run). The command line maps each to an exit
// code in one table (cmd/perfbisect, exitCodes).
type Outcome int

// The outcomes.
const (
	// Done: the command did what was asked (start named the first bad
	// commit; compare found no regression beyond the threshold; run: the
	// commit is good).
	Done Outcome = iota
	// Failure of the tool or the machine: never a verdict on a revision.
	Failure
	// Usage: the input or the configuration is wrong; nothing was measured.
	Usage
	// NoRegression: start's endpoints do not differ.
	NoRegression
	// Undecided: start's answer is a range, or its endpoints could not be
	// told apart at the repeat limit while bad leaned worse; compare is
	// inconclusive.
	Undecided
	// Regression beyond the threshold (compare, scan).
	Regression
	// Interrupted by a signal; no server is left running.
	Interrupted
	// MarkBad and MarkSkip are `perfbisect run`'s verdicts on the commit
	// git bisect checked out (a good one is Done).
	MarkBad
	MarkSkip
)

var outcomeNames = [...]string{"done", "failure", "usage", "no regression", "undecided", "regression", "interrupted", "bad", "skip"}

func (o Outcome) String() string {
	if o >= 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome %d", int(o))
}

// Error is an error that stands for an outcome. Err is the message (nil for
// an outcome that is an answer rather than a failure: a regression, a bad
// mark).
type Error struct {
	Outcome Outcome
	Err     error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Outcome.String()
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// With returns err as an error of outcome o (nil when err is nil and o is
// Done).
func With(o Outcome, err error) error {
	if err == nil && o == Done {
		return nil
	}
	return &Error{Outcome: o, Err: err}
}

// Answer returns the outcome o as an error without a message: an answer that
// is not Done (a regression, an undecided comparison, a bad mark), for the
// exit code alone. Answer(Done) is nil.
func Answer(o Outcome) error { return With(o, nil) }

// OutcomeOf classifies err: nil is Done; an *Error (anywhere in the chain)
// its own Outcome; a usage error of any package (bisect.ErrUsage), an
// endpoint that cannot be measured (*session.EndpointError), a missing CMake
// (build.ErrNoCMake) or a wrong option file (serverctl.ErrOptionFile) is
// Usage; anything else is Failure.
func OutcomeOf(err error) Outcome {
	var e *Error
	var ee *session.EndpointError
	switch {
	case err == nil:
		return Done
	case errors.As(err, &e):
		return e.Outcome
	case errors.Is(err, bisect.ErrUsage), errors.As(err, &ee), errors.Is(err, build.ErrNoCMake), errors.Is(err, serverctl.ErrOptionFile):
		return Usage
	}
	return Failure
}

// Message is what the user is told of err: its text, or "" for an answer
// without a message (Answer).
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Err == nil {
		return ""
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// ErrUsage is wrapped by every package's usage error (bisect.ErrUsage).
var ErrUsage = bisect.ErrUsage
