package simulate

import (
	"testing"

	"github.com/perfbisect/perfbisect/bisect/session"
)

func policy() session.Config {
	return session.Config{Repeats: 6, MaxRepeats: 18, Threshold: 0.05, Confidence: 0.95, Metric: session.TPS}
}

// TestErrorRates checks, over fixed-seed simulated sessions, that the whole
// answer is wrong (a wrong or false culprit) in at most 1-confidence of them,
// and that large regressions are found.
func TestErrorRates(t *testing.T) {
	cases := []struct {
		name       string
		sc         Scenario
		minCorrect float64
	}{
		{"large drop, 5% noise", Scenario{Commits: 40, CulpritPos: 23, Factor: 0.6, CV: 0.05, Broken: []int{11}}, 0.95},
		{"large drop, 5% noise, 10% drift over the session", Scenario{Commits: 40, CulpritPos: 7, Factor: 0.6, CV: 0.05, DriftPerRun: -0.10 / 150}, 0.95},
		{"20% drop, 5% noise", Scenario{Commits: 40, CulpritPos: 31, Factor: 0.8, CV: 0.05}, 0.80},
		{"nothing regressed, 5% noise", Scenario{Commits: 40, CV: 0.05}, 0.95},
		{"nothing regressed, 15% noise", Scenario{Commits: 40, CV: 0.15}, 0.95},
		// Hard cases: the answer may be missing or a range, but must not be wrong.
		{"8% drop, 5% noise", Scenario{Commits: 40, CulpritPos: 17, Factor: 0.92, CV: 0.05}, 0},
		{"30% drop, 15% noise, a broken build next to the culprit", Scenario{Commits: 40, CulpritPos: 20, Factor: 0.7, CV: 0.15, Broken: []int{19}}, 0},
	}
	for _, c := range cases {
		s := Run(c.sc, policy(), 200, 42)
		t.Logf("%s: %s", c.name, s)
		// Wrong answers: a wrong culprit, a range without any culprit, a range that
		// misses it.
		if wrong := float64(s.WrongCulprit+s.FalseAlarm+s.Ambiguous-s.RangeHolds) / float64(s.Sessions); wrong > 0.05 {
			t.Errorf("%s: wrong answer in %.1f%% of sessions, more than 1-confidence", c.name, 100*wrong)
		}
		if correct := float64(s.Correct) / float64(s.Sessions); correct < c.minCorrect {
			t.Errorf("%s: correct in %.1f%% of sessions, want >= %.0f%%", c.name, 100*correct, 100*c.minCorrect)
		}
		if s.Errors > 0 {
			t.Errorf("%s: %d sessions failed", c.name, s.Errors)
		}
	}
}
