package app

import (
	"fmt"
	"regexp"
	"testing"
)

// TestExitCodesPerCommand: a command's help lists the exit codes it can
// exit with and no other, and the application's help lists them all.
func TestExitCodesPerCommand(t *testing.T) {
	bisection := []Outcome{Done, Failure, Usage, NoRegression, Undecided, Interrupted}
	plain := []Outcome{Done, Failure, Usage, Interrupted}
	want := map[string][]Outcome{
		"":      {Done, Failure, Usage, NoRegression, Undecided, Regression, Interrupted},
		"start": bisection, "replay": bisection, "resume": bisection,
		"compare": {Done, Failure, Usage, Undecided, Regression, Interrupted},
		"scan":    {Done, Failure, Usage, Regression, Interrupted},
		"build":   plain, "report": plain, "status": plain, "log": plain, "mark": plain, "reset": plain, "simulate": plain,
	}
	for cmd, outcomes := range want {
		var codes, got []int
		for _, o := range outcomes {
			codes = append(codes, ExitCodes[o])
		}
		for _, m := range regexp.MustCompile(`(?m)^   ([0-9]+) `).FindAllStringSubmatch(ExitCodesHelp(cmd), -1) {
			var n int
			fmt.Sscan(m[1], &n)
			got = append(got, n)
		}
		if fmt.Sprint(got) != fmt.Sprint(codes) {
			t.Errorf("exit codes in the help of %q: %v, want %v", cmd, got, codes)
		}
	}
}
