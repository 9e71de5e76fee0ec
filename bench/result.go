package bench

import (
	"encoding/json"
	"time"
)

// Result is one run's numbers over its measured window, by sysbench's rules:
// an event is one completed transaction (or statement, for single-statement
// workloads); a statement that returned a result set is a read, one that changed
// rows a write, anything else (BEGIN, COMMIT, DML that changed nothing) other.
// Only what completed inside the window counts; the warm-up is in no field.
type Result struct {
	// Driver is what produced the numbers: DriverBuiltin, or "sysbench" and its
	// version ("sysbench 1.0.20") for sysbench.Run.
	Driver string

	// Window is the measured time, from Hooks.MeasureStart to Hooks.MeasureEnd
	// (Options.Time plus the timer's lateness, microseconds).
	Window time.Duration
	// ClientCPU is the CPU time (user and system) an out-of-process client
	// used over the window: sysbench's, from its /proc/PID/stat at the
	// window's edges (10 ms resolution); 0 for the built-in client, whose
	// CPU is the calling process's own, and when it could not be read.
	ClientCPU time.Duration
	// Events is the number of completed events (sysbench's "transactions").
	Events int64
	// Reads, Writes and Other count statements by class, including the
	// statements that succeeded in attempts that later failed and were retried
	// (as sysbench counts them). ROLLBACK after an ignored error is not counted.
	Reads, Writes, Other int64
	// TPS is Events per second of Window; QPS is Reads+Writes+Other per second.
	TPS, QPS float64

	// LatencyMin, LatencyAvg and LatencyMax are exact, over events: from the
	// start of an event's first attempt to its successful end (retries included).
	LatencyMin, LatencyAvg, LatencyMax time.Duration
	// LatencyPct is the Percentile-th percentile of event latency, from an HDR
	// histogram of microseconds with 3 significant digits.
	LatencyPct time.Duration
	// LatencyP95 and LatencyP99 are the 95th and 99th percentiles of event
	// latency from the same histogram, whatever Percentile is (for
	// perfbisect's --metric p95 and p99).
	LatencyP95, LatencyP99 time.Duration
	// LatencySum is the sum of event latencies (sysbench's "sum").
	LatencySum time.Duration
	// Percentile is Options.Percentile, the percentile LatencyPct and the
	// intervals' P95 are at.
	Percentile float64

	// IgnoredErrors counts attempts that failed with an error of
	// Options.IgnoreErrors and were rolled back and retried.
	IgnoredErrors int64
	// IgnoredByCode splits IgnoredErrors by server error number.
	IgnoredByCode map[uint16]int64
	// Reconnects counts lost connections that were re-opened (the event was then
	// retried).
	Reconnects int64
	// Emulated names the statements the server refused to prepare
	// (ER_UNSUPPORTED_PS, 1295: BEGIN on MariaDB 10.0 and MySQL 5.x), which
	// were sent as text (COM_QUERY) at every execution instead, as sysbench
	// 1.0 does; sorted, nil when every statement was prepared.
	Emulated []string
	// Statements are the statements' times in the window and their plans,
	// the dearest first (Hooks.Statements; nil without it).
	Statements []StatementTime

	// ThreadEvents is the number of events each thread completed, by thread
	// number (sysbench's "threads fairness").
	ThreadEvents []int64
	// ThreadTime is the sum of the latencies of each thread's events.
	ThreadTime []time.Duration

	// Intervals is the per-second series of the window, in order. The last one
	// may be shorter or longer than a second (see Interval.Length).
	Intervals []Interval

	// ByKind splits the events by transaction, for workloads made of named
	// transactions (a SQL workload file's, TPC-C's), in their order; nil
	// otherwise.
	ByKind []KindResult
	// TPMC is TPC-C's New-Order transactions per minute of the window; 0
	// for other workloads.
	TPMC float64

	// The series grouped by the run's ReportInterval when that is over a second.
	reportStep      time.Duration
	reportIntervals []Interval
}

// KindResult is one transaction's share of a run: how many completed in
// the window, per second, and their latency percentiles (Percentile's,
// 95th, 99th).
type KindResult struct {
	Name                               string
	Events                             int64
	PerSecond                          float64
	LatencyPct, LatencyP95, LatencyP99 time.Duration
}

// Kind returns the transaction name's numbers, and false when r has none.
func (r *Result) Kind(name string) (KindResult, bool) {
	for _, k := range r.ByKind {
		if k.Name == name {
			return k, true
		}
	}
	return KindResult{}, false
}

// DriverBuiltin is Result.Driver of the built-in workload.
const DriverBuiltin = "built-in"

// Interval is the numbers of one slice of the measured window.
type Interval struct {
	// At is the end of the interval, from the start of the measured window.
	At time.Duration
	// Length is the interval's duration (a second, except perhaps the last).
	Length time.Duration
	// TPS and QPS are events and statements per second.
	TPS, QPS float64
	// ReadsPS, WritesPS and OtherPS split QPS by class.
	ReadsPS, WritesPS, OtherPS float64
	// P95 is the Options.Percentile percentile (95 by default, hence the name)
	// of the latency of the events that completed in the interval; 0 if none did.
	P95 time.Duration
	// IgnoredErrorsPS and ReconnectsPS are ignored errors and reconnects per
	// second.
	IgnoredErrorsPS, ReconnectsPS float64
}

// MarshalJSON encodes r with sysbench's names and explicit units: seconds for
// the window and interval times, milliseconds for latencies, per-second rates.
//
//	{"driver": "built-in", "window_s": 10.0002, "transactions": 30000,
//	 "queries": {"read": 420000, "write": 0, "other": 60000, "total": 480000},
//	 "tps": 2999.9, "qps": 47998.6,
//	 "latency_ms": {"min": 0.5, "avg": 0.66, "max": 12.1, "percentile": 95, "pct": 0.83,
//	                "p95": 0.83, "p99": 1.2, "sum": 19800.1},
//	 "ignored_errors": 0, "ignored_by_code": {"1213": 0}, "reconnects": 0,
//	 "sent_as_text": ["BEGIN"], (statements the server would not prepare; omitted when none)
//	 "thread_events": [15000, 15000],
//	 "by_transaction": [{"name": "new_order", "transactions": 1350, "per_s": 135, "pct_ms": ..., "p95_ms": ..., "p99_ms": ...}, ...],
//	   (workloads of named transactions; omitted otherwise)
//	 "tpmc": 8100, (TPC-C; omitted otherwise)
//	 "intervals": [{"at_s": 1, "length_s": 1, "tps": ..., "qps": ..., "reads_ps": ...,
//	                "writes_ps": ..., "other_ps": ..., "pct_ms": ..., "ignored_errors_ps": ...,
//	                "reconnects_ps": ...}, ...]}
//
// p95 and p99 are 0 when unknown (sysbench prints one percentile).
func (r *Result) MarshalJSON() ([]byte, error) {
	type latency struct {
		Min        float64 `json:"min"`
		Avg        float64 `json:"avg"`
		Max        float64 `json:"max"`
		Percentile float64 `json:"percentile"`
		Pct        float64 `json:"pct"`
		P95        float64 `json:"p95"`
		P99        float64 `json:"p99"`
		Sum        float64 `json:"sum"`
	}
	type interval struct {
		At              float64 `json:"at_s"`
		Length          float64 `json:"length_s"`
		TPS             float64 `json:"tps"`
		QPS             float64 `json:"qps"`
		ReadsPS         float64 `json:"reads_ps"`
		WritesPS        float64 `json:"writes_ps"`
		OtherPS         float64 `json:"other_ps"`
		Pct             float64 `json:"pct_ms"`
		IgnoredErrorsPS float64 `json:"ignored_errors_ps"`
		ReconnectsPS    float64 `json:"reconnects_ps"`
	}
	ivs := make([]interval, len(r.Intervals))
	for i, iv := range r.Intervals {
		ivs[i] = interval{iv.At.Seconds(), iv.Length.Seconds(), iv.TPS, iv.QPS, iv.ReadsPS, iv.WritesPS, iv.OtherPS,
			ms(iv.P95), iv.IgnoredErrorsPS, iv.ReconnectsPS}
	}
	type kind struct {
		Name      string  `json:"name"`
		Events    int64   `json:"transactions"`
		PerSecond float64 `json:"per_s"`
		Pct       float64 `json:"pct_ms"`
		P95       float64 `json:"p95_ms"`
		P99       float64 `json:"p99_ms"`
	}
	var kinds []kind
	for _, k := range r.ByKind {
		kinds = append(kinds, kind{k.Name, k.Events, k.PerSecond, ms(k.LatencyPct), ms(k.LatencyP95), ms(k.LatencyP99)})
	}
	return json.Marshal(struct {
		Driver        string           `json:"driver"`
		Window        float64          `json:"window_s"`
		Events        int64            `json:"transactions"`
		Queries       map[string]int64 `json:"queries"`
		TPS           float64          `json:"tps"`
		QPS           float64          `json:"qps"`
		Latency       latency          `json:"latency_ms"`
		IgnoredErrors int64            `json:"ignored_errors"`
		IgnoredByCode map[uint16]int64 `json:"ignored_by_code,omitempty"`
		Reconnects    int64            `json:"reconnects"`
		Emulated      []string         `json:"sent_as_text,omitempty"`
		ThreadEvents  []int64          `json:"thread_events,omitempty"`
		Intervals     []interval       `json:"intervals"`
		ByKind        []kind           `json:"by_transaction,omitempty"`
		TPMC          float64          `json:"tpmc,omitempty"`
	}{
		Driver: r.Driver, Window: r.Window.Seconds(), Events: r.Events,
		Queries: map[string]int64{"read": r.Reads, "write": r.Writes, "other": r.Other, "total": r.Reads + r.Writes + r.Other},
		TPS:     r.TPS, QPS: r.QPS,
		Latency: latency{ms(r.LatencyMin), ms(r.LatencyAvg), ms(r.LatencyMax), r.Percentile, ms(r.LatencyPct),
			ms(r.LatencyP95), ms(r.LatencyP99), ms(r.LatencySum)},
		IgnoredErrors: r.IgnoredErrors, IgnoredByCode: r.IgnoredByCode, Reconnects: r.Reconnects,
		Emulated: r.Emulated, ThreadEvents: r.ThreadEvents, Intervals: ivs, ByKind: kinds, TPMC: r.TPMC,
	})
}
