package simulate

import (
	"testing"

	"github.com/perfbisect/perfbisect/bisect/session"
)

// BenchmarkSessions simulates 20 sessions of two rows of the grid (-3% at 3%
// noise, and -5% at 3% bimodal noise) on one worker: the posterior's
// computing time per simulated session set (docs/measurements.md).
//
//	go test -run '^$' -bench Sessions -benchtime 1x ./bisect/simulate
func BenchmarkSessions(b *testing.B) {
	cfg := session.Config{Repeats: 6, MaxRepeats: session.BayesEndpointRuns, Threshold: 0.01, Confidence: 0.99, Metric: session.TPS}
	for b.Loop() {
		for _, sc := range []Scenario{
			{Commits: 40, CulpritPos: 1, RandomPos: true, Factor: 0.97, CV: 0.03},
			{Commits: 40, CulpritPos: 1, RandomPos: true, Factor: 0.95, CV: 0.03, Noise: "bimodal"},
		} {
			s := RunParallel(sc, cfg, 20, 5, 1)
			b.ReportMetric(s.MeanRuns, "runs/session-"+map[string]string{"": "plain", "bimodal": "bimodal"}[sc.Noise])
		}
	}
}
