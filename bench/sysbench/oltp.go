package sysbench

import (
	"context"

	"github.com/perfbisect/perfbisect/bench"
)

// OLTP is one of sysbench's OLTP workloads run by real sysbench 1.0's own
// script with the same options as the built-in engine's (bench.OLTP). The
// tables are loaded by the built-in bench.Prepare, so that both get the same
// rows (sysbench's own prepare draws them from the clock's seed), unless
// OwnPrepare is set.
type OLTP struct {
	Options  bench.Options
	Sysbench Binary
	// OwnPrepare has sysbench load the tables, as a user's own sysbench
	// prepare would (perfbisect bench --driver sysbench prepare).
	OwnPrepare bool
}

// Name is Options.Workload.
func (w OLTP) Name() string { return w.Options.Workload }

// Summary is Options.Summary and what runs it.
func (w OLTP) Summary() string { return w.Options.Summary() + ", run by sysbench" }

// Threads is Options.Threads.
func (w OLTP) Threads() int { return w.Options.Threads }

// WithThreads sets Options.Threads.
func (w OLTP) WithThreads(n int) bench.Workload {
	w.Options.Threads = n
	return w
}

// Percentile is Options.Percentile.
func (w OLTP) Percentile() float64 { return w.Options.Percentile }

// Prepare is the built-in bench.Prepare (the same rows as the built-in
// engine's), or sysbench's own with OwnPrepare.
func (w OLTP) Prepare(ctx context.Context, conn bench.Connection) error {
	if w.OwnPrepare {
		_, err := Run(ctx, conn, w.Options, "prepare", w.Sysbench)
		return err
	}
	return bench.Prepare(ctx, conn.DSN(), w.Options)
}

// Run is sysbench's run, with hooks around its measured window.
func (w OLTP) Run(ctx context.Context, conn bench.Connection, hooks bench.Hooks) (*bench.Result, error) {
	sb := w.Sysbench
	sb.Hooks = hooks
	return Run(ctx, conn, w.Options, "run", sb)
}

// Cleanup is sysbench's cleanup.
func (w OLTP) Cleanup(ctx context.Context, conn bench.Connection) error {
	_, err := Run(ctx, conn, w.Options, "cleanup", w.Sysbench)
	return err
}

// Identity is bench.OLTP's, with "driver": "sysbench".
func (w OLTP) Identity() map[string]string {
	id := bench.OLTP{Options: w.Options}.Identity()
	id["driver"] = "sysbench"
	return id
}

// DataKey is Options.DataKey.
func (w OLTP) DataKey() string { return w.Options.DataKey() }

// ClientInProcess is false: sysbench is another process.
func (w OLTP) ClientInProcess() bool { return false }

// Metrics are bench.StandardMetrics.
func (w OLTP) Metrics() []string { return bench.StandardMetrics }

var (
	_ bench.Workload = OLTP{}
	_ bench.Workload = (*Script)(nil)
)
