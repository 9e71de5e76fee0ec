package app

import (
	"fmt"
	"strings"
)

// ExitCodes is the one table from a command's outcome to its process exit
// code, for every command but run (git bisect run's protocol, in cmd); it
// is the README's table and ExitCodesHelp's.
var ExitCodes = map[Outcome]int{
	Done:         0,
	Failure:      1,
	Usage:        2,
	NoRegression: 3,   // start: the endpoints do not differ
	Undecided:    4,   // start: the answer is a range, or the endpoints unresolved; compare: inconclusive at --max-repeats
	Regression:   5,   // compare, scan: a regression beyond --threshold
	Interrupted:  130, // a signal; no server is left running
}

// ExitCodesHelp is the "EXIT CODES:" table of command cmd's help (cmd is a
// perfbisect command's name): the rows of ExitCodes the command can exit
// with, in its own words; cmd "" gives every row, for the application's
// help.
func ExitCodesHelp(cmd string) string {
	all := cmd == ""
	bisects := all || cmd == "start" || cmd == "replay" || cmd == "resume"
	var b strings.Builder
	b.WriteString("EXIT CODES:\n")
	row := func(o Outcome, text string) { fmt.Fprintf(&b, "   %-4d %s\n", ExitCodes[o], text) }
	switch cmd {
	case "":
		row(Done, "done (start: first bad commit found; compare: no regression beyond --threshold)")
	case "start", "replay", "resume":
		row(Done, "done: first bad commit found")
	case "compare":
		row(Done, "no regression beyond --threshold")
	case "scan":
		row(Done, "no regression beyond --threshold between measured commits")
	case "build":
		row(Done, "every revision built")
	default:
		row(Done, "done")
	}
	if cmd == "build" {
		row(Failure, "a revision did not build, or a failure of the tool or the machine")
	} else {
		row(Failure, "failure of the tool or the machine (never a verdict on a revision)")
	}
	if bisects || cmd == "compare" || cmd == "scan" {
		row(Usage, "usage or configuration error, or an endpoint that cannot be built or run (choose another)")
	} else {
		row(Usage, "usage or configuration error")
	}
	switch {
	case all:
		row(NoRegression, "no regression reproduced (start: the endpoints do not differ)")
	case bisects:
		row(NoRegression, "no regression reproduced: the endpoints do not differ")
	}
	switch {
	case all:
		row(Undecided, "undecided (start: a range, or endpoints not told apart; compare: inconclusive at --max-repeats)")
	case bisects:
		row(Undecided, "undecided: a range, or endpoints not told apart")
	case cmd == "compare":
		row(Undecided, "inconclusive at --max-repeats")
	}
	switch {
	case all:
		row(Regression, "regression beyond --threshold (compare, scan)")
	case cmd == "compare" || cmd == "scan":
		row(Regression, "regression beyond --threshold")
	}
	switch {
	case bisects:
		row(Interrupted, "interrupted (no server is left running; perfbisect resume continues a bisection)")
	case cmd == "compare" || cmd == "scan":
		row(Interrupted, "interrupted (no server is left running)")
	default:
		row(Interrupted, "interrupted")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
