package bench

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WriteText writes r as sysbench 1.0 prints a run: the options header, one line
// per o.ReportInterval ("[ 1s ] thds: 2 tps: ... lat (ms,95%): ..."), then the
// SQL statistics, general statistics, latency (ms) and threads fairness sections,
// with sysbench's labels and column widths, so that people and scripts used to
// sysbench output can read it. Interval lines use the run's own grouping when
// o.ReportInterval is the one the run had; for another interval they are
// averages of the per-second series, with the largest per-second percentile
// standing in for the interval's. It returns the first write error.
// WriteHeader, WriteInterval and WriteSummary write its parts, for a report
// printed as the run goes.
func (r *Result) WriteText(w io.Writer, o Options) error {
	if err := WriteHeader(w, o, r.Driver); err != nil {
		return err
	}
	for _, iv := range r.reportLines(o.ReportInterval) {
		if err := WriteInterval(w, iv, o); err != nil {
			return err
		}
	}
	return r.WriteSummary(w, o)
}

// WriteHeader writes what sysbench prints before a run's first interval line:
// the driver (DriverBuiltin or a sysbench version), workload, threads, report
// interval, seed and the warm-up.
func WriteHeader(w io.Writer, o Options, driver string) error {
	p := &printer{w: w}
	if (driver == DriverBuiltin || driver == "") && o.Workload == "oltp_legacy" {
		p.f("perfbisect built-in oltp_legacy (sysbench 0.4.12 --test=oltp compatible)\n\n")
	} else if driver == DriverBuiltin || driver == "" {
		p.f("perfbisect built-in %s (sysbench 1.0.20 compatible)\n\n", o.Workload)
	} else {
		p.f("%s %s, run by perfbisect\n\n", driver, o.Workload)
	}
	p.f("Running the test with following options:\n")
	p.f("Number of threads: %d\n", o.Threads)
	if o.ReportInterval > 0 {
		p.f("Report intermediate results every %d second(s)\n", int(o.ReportInterval/time.Second))
	}
	if o.RandSeed != 0 {
		p.f("Initializing random number generator from seed (%d).\n", o.RandSeed)
	} else {
		p.f("Initializing random number generator from current time\n")
	}
	p.f("Warm-up: %s (excluded from every number), measured window: %s\n\n", o.Warmup, o.Time)
	return p.err
}

// WriteInterval writes iv as sysbench's --report-interval line, its time counted
// from the start of the measured window.
func WriteInterval(w io.Writer, iv Interval, o Options) error {
	_, err := fmt.Fprintf(w, "[ %ds ] thds: %d tps: %.2f qps: %.2f (r/w/o: %.2f/%.2f/%.2f) lat (ms,%s%%): %.2f err/s: %.2f reconn/s: %.2f\n",
		int(math.Round(iv.At.Seconds())), o.Threads, iv.TPS, iv.QPS, iv.ReadsPS, iv.WritesPS, iv.OtherPS,
		pctLabel(o.Percentile), ms(iv.P95), iv.IgnoredErrorsPS, iv.ReconnectsPS)
	return err
}

// WriteSummary writes sysbench's final report of r: SQL statistics, general
// statistics (total time is the measured window), latency (ms) and, when r has
// per-thread counts, threads fairness.
func (r *Result) WriteSummary(w io.Writer, o Options) error {
	p := &printer{w: w}
	pct := pctLabel(r.Percentile)
	sec := r.Window.Seconds()
	rate := func(n int64) float64 {
		if sec <= 0 {
			return 0
		}
		return float64(n) / sec
	}
	total := r.Reads + r.Writes + r.Other
	p.f("SQL statistics:\n")
	p.f("    queries performed:\n")
	p.f("%-41s%d\n", "        read:", r.Reads)
	p.f("%-41s%d\n", "        write:", r.Writes)
	p.f("%-41s%d\n", "        other:", r.Other)
	p.f("%-41s%d\n", "        total:", total)
	p.f("%-41s%-6d (%.2f per sec.)\n", "    transactions:", r.Events, rate(r.Events))
	p.f("%-41s%-6d (%.2f per sec.)\n", "    queries:", total, rate(total))
	p.f("%-41s%-6d (%.2f per sec.)\n", "    ignored errors:", r.IgnoredErrors, rate(r.IgnoredErrors))
	p.f("%-41s%-6d (%.2f per sec.)\n", "    reconnects:", r.Reconnects, rate(r.Reconnects))
	if len(r.Emulated) > 0 {
		p.f("%-41s%s (the server does not prepare them)\n", "    sent as text:", strings.Join(r.Emulated, ", "))
	}
	p.f("\nGeneral statistics:\n")
	p.f("%-41s%.4fs\n", "    total time:", sec)
	p.f("%-41s%d\n", "    total number of events:", r.Events)
	p.f("\nLatency (ms):\n")
	p.f("         %-16s%28.2f\n", "min:", ms(r.LatencyMin))
	p.f("         %-16s%28.2f\n", "avg:", ms(r.LatencyAvg))
	p.f("         %-16s%28.2f\n", "max:", ms(r.LatencyMax))
	p.f("         %-16s%28.2f\n", pct+"th percentile:", ms(r.LatencyPct))
	p.f("         %-16s%28.2f\n", "sum:", ms(r.LatencySum))
	if len(r.ByKind) > 0 {
		p.f("\nTransactions by name (latency in ms):\n")
		if r.TPMC > 0 {
			p.f("    tpmC (New-Order per minute):         %.1f\n", r.TPMC)
		}
		p.f("    %-24s %10s %10s %10s %10s\n", "name", "count", "per sec.", pct+"th pct", "99th pct")
		for _, k := range r.ByKind {
			p.f("    %-24s %10d %10.2f %10.2f %10.2f\n", k.Name, k.Events, k.PerSecond, ms(k.LatencyPct), ms(k.LatencyP99))
		}
	}
	if len(r.ThreadEvents) == 0 { // sysbench prints no per-thread counts
		p.f("\n")
		return p.err
	}
	p.f("\nThreads fairness:\n")
	ev := make([]float64, len(r.ThreadEvents))
	for i, n := range r.ThreadEvents {
		ev[i] = float64(n)
	}
	tt := make([]float64, len(r.ThreadTime))
	for i, d := range r.ThreadTime {
		tt[i] = d.Seconds()
	}
	em, es := meanStddev(ev)
	tm, ts := meanStddev(tt)
	p.f("    events (avg/stddev):           %.4f/%3.2f\n", em, es)
	p.f("    execution time (avg/stddev):   %.4f/%3.2f\n", tm, ts)
	if len(r.IgnoredByCode) > 0 {
		p.f("\nIgnored errors by code:")
		for _, code := range sortedCodes(r.IgnoredByCode) {
			p.f(" %d: %d", code, r.IgnoredByCode[code])
		}
		p.f("\n")
	}
	p.f("\n")
	return p.err
}

// reportLines returns the interval lines for step (none for 0).
func (r *Result) reportLines(step time.Duration) []Interval {
	switch {
	case step <= 0:
		return nil
	case step == time.Second:
		return r.Intervals
	case step == r.reportStep:
		return r.reportIntervals
	}
	return GroupIntervals(r.Intervals, step)
}

// GroupIntervals averages consecutive per-second intervals into one per step
// (ending where At is a multiple of step, and at the last), with the largest
// per-second percentile standing in for the group's.
func GroupIntervals(ivs []Interval, step time.Duration) []Interval {
	var out []Interval
	var cur Interval
	var n float64
	for i, iv := range ivs {
		cur.At = iv.At
		cur.Length += iv.Length
		cur.TPS += iv.TPS
		cur.QPS += iv.QPS
		cur.ReadsPS += iv.ReadsPS
		cur.WritesPS += iv.WritesPS
		cur.OtherPS += iv.OtherPS
		cur.IgnoredErrorsPS += iv.IgnoredErrorsPS
		cur.ReconnectsPS += iv.ReconnectsPS
		cur.P95 = max(cur.P95, iv.P95)
		n++
		if iv.At%step == 0 || i == len(ivs)-1 {
			cur.TPS /= n
			cur.QPS /= n
			cur.ReadsPS /= n
			cur.WritesPS /= n
			cur.OtherPS /= n
			cur.IgnoredErrorsPS /= n
			cur.ReconnectsPS /= n
			out = append(out, cur)
			cur, n = Interval{}, 0
		}
	}
	return out
}

// pctLabel prints a percentile as sysbench does ("95"), with decimals if needed.
func pctLabel(p float64) string {
	return strconv.FormatFloat(p, 'f', -1, 64)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func meanStddev(xs []float64) (mean, sd float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)))
}

func sortedCodes(m map[uint16]int64) []uint16 {
	return slices.Sorted(maps.Keys(m))
}

// printer writes formatted text and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
