package bench

import (
	"context"
	"encoding/json"
	"fmt"
)

// A Workload is what a run measures, built once from the user's settings:
// it prepares its data in the server (once per revision: into the datadir
// snapshot every run restores), runs one measured window, and says what
// shapes its numbers. The kinds: OLTP, SQLWorkload and TPCC on the built-in engine;
// sysbench.OLTP and sysbench.Script by real sysbench (WorkloadKind).
// Callers (the measurer, perfbisect bench) never ask which kind they have.
type Workload interface {
	// Name is the workload as the user named it: oltp_read_only, or a
	// script's file name (tpcc.lua).
	Name() string
	// Summary describes it in one line for reports: name, threads, data,
	// window, options, and what runs it.
	Summary() string
	// Threads is the number of client connections.
	Threads() int
	// WithThreads returns the same workload at n client connections (a
	// thread sweep), n >= 1.
	WithThreads(n int) Workload
	// Percentile is the latency percentile Result.LatencyPct is at.
	Percentile() float64
	// Prepare creates and loads the workload's tables in conn.DB (created
	// when missing). The same settings load the same rows.
	Prepare(ctx context.Context, conn Connection) error
	// Run measures one window, calling hooks around it (Hooks).
	Run(ctx context.Context, conn Connection, hooks Hooks) (*Result, error)
	// Cleanup drops what Prepare made (perfbisect bench cleanup; a
	// bisection restores a snapshot instead).
	Cleanup(ctx context.Context, conn Connection) error
	// Identity names every setting and content that shapes the numbers, for
	// a session's identity: "workload" (all of it as one value) and
	// "workload NAME" per setting, so that a difference is said by name.
	Identity() map[string]string
	// DataKey is what decides the prepared data, as one string: workloads
	// with equal DataKeys load identical tables (a datadir snapshot is
	// shared between them).
	DataKey() string
	// ClientInProcess reports whether the client runs in this process (the
	// built-in engine: its CPU time is this process's), not in another
	// (sysbench).
	ClientInProcess() bool
	// Metrics names what a run of it can be judged by (session's --metric
	// values), its headline first.
	Metrics() []string
}

// StandardMetrics are the metrics every workload's runs have: tps, qps,
// p95, p99 and the server's CPU time per transaction.
var StandardMetrics = []string{"tps", "qps", "p95", "p99", "cpu-per-txn"}

// QueryMetrics are StandardMetrics with qps first: the metrics of a workload
// whose events are not transactions (no BEGIN or COMMIT), where a query is
// the unit of work.
var QueryMetrics = []string{"qps", "tps", "p95", "p99", "cpu-per-txn"}

// OLTP is one of sysbench's OLTP workloads (Options.Workload, one of
// Workloads()) as a Workload run by the built-in engine. (sysbench.OLTP runs
// the same workload by real sysbench 1.0's own scripts.)
type OLTP struct {
	Options Options
}

// Name is Options.Workload.
func (w OLTP) Name() string { return w.Options.Workload }

// Summary is Options.Summary and what runs it.
func (w OLTP) Summary() string { return w.Options.Summary() + ", built-in" }

// Threads is Options.Threads.
func (w OLTP) Threads() int { return w.Options.Threads }

// WithThreads sets Options.Threads.
func (w OLTP) WithThreads(n int) Workload {
	w.Options.Threads = n
	return w
}

// Percentile is Options.Percentile.
func (w OLTP) Percentile() float64 { return w.Options.Percentile }

// Prepare is the built-in Prepare.
func (w OLTP) Prepare(ctx context.Context, conn Connection) error {
	return Prepare(ctx, conn.DSN(), w.Options)
}

// Run is the built-in Run.
func (w OLTP) Run(ctx context.Context, conn Connection, hooks Hooks) (*Result, error) {
	return Run(ctx, conn.DSN(), w.Options, hooks)
}

// Cleanup is the built-in Cleanup.
func (w OLTP) Cleanup(ctx context.Context, conn Connection) error {
	return Cleanup(ctx, conn.DSN(), w.Options)
}

// Identity is the options as one JSON value ("workload") and field by
// field ("workload threads" ...).
func (w OLTP) Identity() map[string]string {
	b, _ := json.Marshal(w.Options)
	var fields map[string]any
	_ = json.Unmarshal(b, &fields)
	id := map[string]string{IdentityKey: string(b)}
	for k, v := range fields {
		id[IdentityKey+" "+k] = fmt.Sprint(v)
	}
	return id
}

// IdentityKey is the session identity's key of a workload's settings as one
// value; each setting is also keyed on its own as IdentityKey, a space and
// its name.
const IdentityKey = "workload"

// IdentityOf is the identity of a workload with these settings, by name:
// all of them as one JSON object (IdentityKey) and each on its own.
func IdentityOf(fields map[string]string) map[string]string {
	b, _ := json.Marshal(fields)
	id := map[string]string{IdentityKey: string(b)}
	for k, v := range fields {
		id[IdentityKey+" "+k] = v
	}
	return id
}

// DataKey is Options.DataKey.
func (w OLTP) DataKey() string { return w.Options.DataKey() }

// ClientInProcess is true: the built-in engine runs here.
func (w OLTP) ClientInProcess() bool { return true }

// Metrics are StandardMetrics.
func (w OLTP) Metrics() []string { return StandardMetrics }

var (
	_ Workload = OLTP{}
	_ Workload = (*SQLWorkload)(nil)
	_ Workload = (*TPCC)(nil)
)
