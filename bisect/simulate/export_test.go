package simulate

import (
	"context"

	"github.com/perfbisect/perfbisect/bisect/session"
)

// RunParallel simulates sessions sessions of sc with the session policy of
// cfg (Good, Bad and Commits are filled in), seeded with seed, on workers
// goroutines (at least 1).
func RunParallel(sc Scenario, cfg session.Config, sessions int, seed uint64, workers int) Summary {
	s, _ := RunContext(context.Background(), sc, cfg, sessions, seed, workers)
	return s
}
