package bisect

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Run is one process-level measurement of one revision: one server start on a
// known datadir state, one warm-up, one timed window, one number per metric.
type Run struct {
	Commit    string        `json:"commit"`
	TPS       float64       `json:"tps"`         // transactions per second over the measured window
	QPS       float64       `json:"qps"`         // queries per second over the measured window
	CPUPerTxn time.Duration `json:"cpu_per_txn"` // server (mysqld) user+system CPU time per transaction
	// TPMC is TPC-C's New-Order transactions per minute of the window, and
	// CPUPerNewOrder the server's CPU time per New-Order; 0 for other
	// workloads.
	TPMC           float64       `json:"tpmc,omitempty"`
	CPUPerNewOrder time.Duration `json:"cpu_per_new_order,omitempty"`
	LatencyPct     time.Duration `json:"latency_pct"` // latency percentile of the workload (p95 by default)
	LatencyP95     time.Duration `json:"latency_p95,omitempty"`
	LatencyP99     time.Duration `json:"latency_p99,omitempty"`
	Events         int64         `json:"transactions"` // transactions in the window
	Window         time.Duration `json:"window"`       // length of the measured window
	Started        time.Time     `json:"started"`
	// Host is the runner host that measured the run ("" on this machine).
	Host string        `json:"host,omitempty"`
	Wall time.Duration `json:"wall"` // wall time of the whole run, start to stop
	// Status holds SHOW GLOBAL STATUS over the measured window: deltas of
	// serverctl.StatusCounters, end values of serverctl.StatusGauges.
	Status map[string]int64 `json:"status,omitempty"`
	// PeakRSS is the server's peak resident set size in bytes.
	PeakRSS int64 `json:"peak_rss,omitempty"`
	// Series is the run's per-second timeline over the measured window (the
	// warm-up excluded), in order; empty for runs stored before it was kept.
	Series []Second `json:"series,omitempty"`
	// Facts describe what measured: server (flavor and version), kernel,
	// cpu_model, cpus, governor, mem_bytes, datadir_fs, server_cpus and
	// client_cpus (the CPU lists mysqld and the client could run on, as the
	// kernel reported them during the run), and overridden: the
	// settings of the user's option file the tool replaced ("FILE:LINE
	// name=value -> value; ..."); what the machine did besides the run
	// (steal_s, other_cpu_s, server_wait_share, throttled_s,
	// client_cpu_us_txn); the runs measured again before it and not counted
	// (discarded_runs, FactDiscardedKinds) and, when it counts although
	// disturbed, why (disturbed, FactDisturbedKinds).
	Facts map[string]string `json:"facts,omitempty"`
	// ServerOptions are the options the server read from its effective option
	// file, one per line (as mysqld --print-defaults lists them); kept in the
	// store beside the run, not in reports.
	ServerOptions string `json:"-"`
}

// FactDiscardedKinds is the run fact that names, comma separated, the kinds
// of disturbance of the runs measured again before the run and not counted:
// "steal", "other processes", "throttled" (a CPU quota on the server's
// cgroup), "descheduled" (its threads waited for a CPU), "slow machine"
// (the client's CPU per transaction rose with the server's).
// FactDisturbedKinds names those of the run itself when it counts although
// disturbed (its re-measurements ran out; its fact "disturbed" says why).
const (
	FactDiscardedKinds = "discarded_kinds"
	FactDisturbedKinds = "disturbed_kinds"
)

// FactLayout is the run fact naming the code layout its server was linked
// in (--layouts): "seed N" for a layout of its own (LayoutSeed), "I of K"
// for one of the build's K kept layouts (LayoutKept); absent for the
// build's own binary.
const FactLayout = "layout"

// LayoutSeed is the FactLayout of a run linked in a layout of its own,
// shuffled with seed: "seed 123456".
func LayoutSeed(seed int64) string { return fmt.Sprintf("seed %d", seed) }

// LayoutKept is the FactLayout of a run of kept layout i (1-based) of k:
// "2 of 16".
func LayoutKept(i, k int) string { return fmt.Sprintf("%d of %d", i, k) }

// ParseLayout reads a FactLayout: perRun for a layout of its own (seed),
// else the kept layout i of k; ok is false for "" (the build's own binary)
// and for any other text.
func ParseLayout(v string) (perRun bool, seed int64, i, k int, ok bool) {
	if rest, found := strings.CutPrefix(v, "seed "); found {
		seed, err := strconv.ParseInt(rest, 10, 64)
		return err == nil, seed, 0, 0, err == nil
	}
	a, b, found := strings.Cut(v, " of ")
	i, erri := strconv.Atoi(a)
	k, errk := strconv.Atoi(b)
	if !found || erri != nil || errk != nil || i < 1 || i > k {
		return false, 0, 0, 0, false
	}
	return false, 0, i, k, true
}

// Second is one slice of a run's timeline: normally a second; the last one
// may be shorter or longer.
type Second struct {
	At  time.Duration `json:"at"`  // end of the slice, from the start of the measured window
	TPS float64       `json:"tps"` // transactions per second in the slice
	QPS float64       `json:"qps"` // queries per second in the slice
	// Pct is the workload's latency percentile (p95 by default) of the
	// transactions that completed in the slice; 0 when none did.
	Pct time.Duration `json:"pct"`
}

// Measurer measures a revision: it builds (or reuses) it, starts it as a private
// server on a fresh copy of its prepared datadir and runs the workload, runs
// times. It returns an *UntestableError when the revision cannot be measured
// through its own fault (build failure, server that does not start or dies), and
// any other error for failures of the tool or the machine.
type Measurer interface {
	Measure(ctx context.Context, commit string, runs int) ([]Run, error)
}

// HostMeasurer is a Measurer with runner hosts (Config.Hosts of a
// session): it takes runs of commit on host (the session sets each Run's
// Host).
// Runs are comparable only within a host: a session places them so that
// every host measures its own references.
type HostMeasurer interface {
	MeasureOn(ctx context.Context, host, commit string, runs int) ([]Run, error)
}

// HostRun is one run a round places: a run of Commit on Host.
type HostRun struct{ Host, Commit string }

// RoundPlanner is a HostMeasurer told, before a round's runs are asked for
// one by one (MeasureOn, in the hosts' order), which run each host will
// take, so that it can take them all at once. A run asked for that was not
// planned (the planned revision turned out untestable) is taken when
// asked; a run a Measurer took on another host than asked (the host was
// lost) says so in its Run.Host.
type RoundPlanner interface {
	PlanRound(ctx context.Context, runs []HostRun)
}

// RoundEnder is told when a round of runs on every host ends: the hosts
// wait for one another there (a simulation's clocks meet).
type RoundEnder interface {
	EndRound()
}

// Preparer is implemented by Measurers that can get a revision ready (build it,
// prepare its datadir) before its first run. The session prepares every revision
// of a decision before measuring any of them, so that a long build does not sit
// between the runs it compares and a revision that does not build costs no runs.
type Preparer interface {
	Prepare(ctx context.Context, commit string) error
}

// UntestableError is a revision that cannot be measured through its own fault:
// it does not build, its server does not start, or it crashes during a run. The
// bisect skips it, as git bisect skip does.
type UntestableError struct {
	Commit string
	Reason string // "build failed", "server did not start", "server crashed", ...
	Err    error  // the evidence: *build.BuildError, *serverctl.ServerError, ...
}

func (e *UntestableError) Error() string {
	return fmt.Sprintf("%.10s untestable: %s: %v", e.Commit, e.Reason, e.Err)
}

func (e *UntestableError) Unwrap() error { return e.Err }

// IsUntestable reports whether err (or one it wraps) is an *UntestableError.
func IsUntestable(err error) bool {
	var u *UntestableError
	return errors.As(err, &u)
}
