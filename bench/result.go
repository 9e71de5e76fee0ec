package bench

import "time"

// Result is one run's numbers over its measured window, by sysbench's rules:
// an event is one completed transaction (or statement, for single-statement
// workloads); a statement that returned a result set is a read, one that changed
// rows a write, anything else (BEGIN, COMMIT, DML that changed nothing) other.
// Only what completed inside the window counts; the warm-up is in no field.
type Result struct {
	// Driver is what produced the numbers: DriverBuiltin, or "sysbench" and its
	// version ("sysbench 1.0.20") for RunSysbench.
	Driver string

	// Window is the measured time, from Hooks.MeasureStart to Hooks.MeasureEnd
	// (Options.Time plus the timer's lateness, microseconds).
	Window time.Duration
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

	// ThreadEvents is the number of events each thread completed, by thread
	// number (sysbench's "threads fairness").
	ThreadEvents []int64
	// ThreadTime is the sum of the latencies of each thread's events.
	ThreadTime []time.Duration

	// Intervals is the per-second series of the window, in order. The last one
	// may be shorter or longer than a second (see Interval.Length).
	Intervals []Interval

	// The series grouped by the run's ReportInterval when that is over a second.
	reportStep      time.Duration
	reportIntervals []Interval
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
