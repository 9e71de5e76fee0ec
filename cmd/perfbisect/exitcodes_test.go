package main

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/internal/app"
)

// The exit codes as numbers, for the tests: a change of app.ExitCodes must
// change these too (and the README's table, and exitCodesHelp).
const (
	exitOK           = 0
	exitFailure      = 1
	exitUsage        = 2
	exitNoRegression = 3
	exitUndecided    = 4
	exitRegression   = 5
	exitInterrupted  = 130
)

// TestExitCodeTable: every outcome of app.ExitCodes is in the help's table with
// its code, and the help lists no code the table lacks; run's table keeps
// git bisect run's protocol (0, 1, 125, and 128 or more for the rest).
func TestExitCodeTable(t *testing.T) {
	want := map[app.Outcome]int{app.Done: exitOK, app.Failure: exitFailure, app.Usage: exitUsage, app.NoRegression: exitNoRegression,
		app.Undecided: exitUndecided, app.Regression: exitRegression, app.Interrupted: exitInterrupted}
	if fmt.Sprint(app.ExitCodes) != fmt.Sprint(want) {
		t.Errorf("app.ExitCodes = %v, want %v", app.ExitCodes, want)
	}
	inHelp := map[int]bool{}
	for _, m := range regexp.MustCompile(`(?m)^   ([0-9]+) `).FindAllStringSubmatch(app.ExitCodesHelp(""), -1) {
		var n int
		fmt.Sscan(m[1], &n)
		inHelp[n] = true
	}
	for o, c := range app.ExitCodes {
		if !inHelp[c] {
			t.Errorf("outcome %s exits %d, which the help's table does not list", o, c)
		}
		delete(inHelp, c)
	}
	for c := range inHelp {
		t.Errorf("the help lists exit code %d, which no outcome has", c)
	}
	for o, c := range runExitCodes {
		ok := c == 0 && o == app.Done || c == 1 && o == app.MarkBad || c == 125 && o == app.MarkSkip || c >= 128 && o != app.Done && o != app.MarkBad && o != app.MarkSkip
		if !ok {
			t.Errorf("run: outcome %s exits %d: breaks git bisect run's protocol", o, c)
		}
	}
}

// TestOutcomeOfLibraryErrors: errors the packages return unwrapped are
// classified as the table expects.
func TestOutcomeOfLibraryErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want app.Outcome
	}{
		{nil, app.Done},
		{errors.New("disk on fire"), app.Failure},
		{usageErr("--time %q: want seconds", "x"), app.Usage},
		{fmt.Errorf("wrapped: %w", app.Answer(app.Regression)), app.Regression},
		{app.With(app.Failure, usageErr("inner usage, outer failure")), app.Failure},
	} {
		if got := app.OutcomeOf(c.err); got != c.want {
			t.Errorf("OutcomeOf(%v) = %s, want %s", c.err, got, c.want)
		}
	}
	if msg := app.Message(app.Answer(app.Regression)); msg != "" {
		t.Errorf("an answer has no message to print, got %q", msg)
	}
	if !strings.Contains(app.Message(app.With(app.Usage, errors.New("bad flag"))), "bad flag") {
		t.Errorf("a usage error's message is lost")
	}
}
