package bench

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency histograms hold microseconds from 1 µs to 1 hour. The run's histogram
// keeps 3 significant digits (0.1%); per-interval ones 2 (1%) and only while the
// interval is open, which keeps a long run's memory small.
const (
	histLowest  = 1
	histHighest = int64(time.Hour / time.Microsecond)
)

func latencyMicros(d time.Duration) int64 {
	return min(max(d.Microseconds(), histLowest), histHighest)
}

// collector gathers what threads report, keeping only what completes inside the
// measured window [start, end]. Threads pass the time their event or failure
// completed, and that time alone decides: a report is recorded under mu and
// compared with the window's bounds there, which the coordinator sets under mu
// (begin, finish), so every report is either inside or outside, never both.
//
// Completed events wait in their thread's buffer (bufs) and are recorded in
// batches: by the thread when its buffer is full, by the coordinator before it
// closes intervals (after it set the end, in finish). A lock and two
// histograms shared by all threads, touched at every event, kept moving their
// cache lines between CPUs: with two threads on two CPUs that was 4% of the
// client's CPU per point select.
type collector struct {
	epoch time.Time // pending.at is since epoch
	bufs  []*eventBuf

	mu    sync.Mutex
	pct   float64
	start time.Time // zero during warm-up
	end   time.Time // zero until the window closes

	tot        acc
	latMin     time.Duration
	latMax     time.Duration
	latSum     time.Duration
	ignoredBy  map[uint16]int64
	perThread  []int64
	threadTime []time.Duration
	perSecond  series
	perReport  series // grouped by ReportInterval; step 0 when not wanted
	// byKind are the events of each of the program's transactions
	// (kindNames), nil for the OLTP catalogue's workloads.
	byKind    []acc
	kindNames []string
}

// eventBatch is how many completed events a thread buffers before it records
// them: 256 × 40 bytes per thread, recorded about 100 times a second per thread
// at 25,000 events per second.
const eventBatch = 256

// pending is a completed event waiting in its thread's buffer.
type pending struct {
	at  time.Duration // completion, since the collector's epoch
	lat time.Duration
	c   counts
}

// eventBuf is one thread's buffer; mu is taken by the thread for every event
// (uncontended but for the coordinator's drain once a second) and before the
// collector's mu. The padding keeps two threads' buffers off one cache line.
type eventBuf struct {
	mu  sync.Mutex
	evs []pending
	_   [96]byte
}

// acc accumulates one span of time.
type acc struct {
	hist                *hdrhistogram.Histogram // nil once the interval is closed
	events              int64
	c                   counts
	ignored, reconnects int64
}

// merge adds b's counts and latencies to a.
func (a *acc) merge(b *acc) {
	a.events += b.events
	a.c.add(b.c)
	a.ignored += b.ignored
	a.reconnects += b.reconnects
	if a.hist != nil && b.hist != nil {
		a.hist.Merge(b.hist)
	}
}

// series cuts the window into intervals of step. Counters are kept for every
// interval; the histogram only until the interval closes (a second after its end
// at most), when its percentile is taken. A report that arrives after that
// (a thread descheduled between finishing an event and reporting it) still
// counts in the interval's rates.
type series struct {
	step   time.Duration
	accs   []*acc          // by interval index
	ats    []time.Duration // end of each closed interval
	pcts   []time.Duration // percentile of each closed interval
	closed int             // intervals [0, closed) are closed
	done   bool            // the interval ending at the window's end is closed
}

func newCollector(o *Options, kinds ...string) *collector {
	c := &collector{
		kindNames:  kinds,
		epoch:      time.Now(),
		bufs:       make([]*eventBuf, o.Threads),
		pct:        o.Percentile,
		tot:        acc{hist: hdrhistogram.New(histLowest, histHighest, 3)},
		ignoredBy:  map[uint16]int64{},
		perThread:  make([]int64, o.Threads),
		threadTime: make([]time.Duration, o.Threads),
		perSecond:  series{step: time.Second},
	}
	for i := range c.bufs {
		c.bufs[i] = &eventBuf{evs: make([]pending, 0, eventBatch)}
	}
	if o.ReportInterval > time.Second {
		c.perReport = series{step: o.ReportInterval}
	}
	for range kinds {
		c.byKind = append(c.byKind, acc{hist: hdrhistogram.New(histLowest, histHighest, 3)})
	}
	return c
}

// inWindow reports whether t is inside the measured window. Call with mu held.
func (c *collector) inWindow(t time.Time) bool {
	return !c.start.IsZero() && !t.Before(c.start) && (c.end.IsZero() || !t.After(c.end))
}

// each calls do for the accumulators t falls in: the total and its intervals.
// Call with mu held and t in the window.
func (c *collector) each(t time.Time, do func(a *acc)) {
	do(&c.tot)
	for _, s := range []*series{&c.perSecond, &c.perReport} {
		if s.step == 0 {
			continue
		}
		i := int(t.Sub(c.start) / s.step)
		if s.done && i >= len(s.accs) { // the tail absorbed by the last interval
			i = len(s.accs) - 1
		}
		for len(s.accs) <= i {
			s.accs = append(s.accs, &acc{hist: hdrhistogram.New(histLowest, histHighest, 2)})
		}
		do(s.accs[i])
	}
}

// event records an event of thread that completed at t after lat (its first
// attempt's start to its commit), with its statements: into the thread's
// buffer, and the buffer into the collector when it is full.
func (c *collector) event(t time.Time, lat time.Duration, thread int, n counts) {
	b := c.bufs[thread]
	b.mu.Lock()
	b.evs = append(b.evs, pending{at: t.Sub(c.epoch), lat: lat, c: n})
	if len(b.evs) == cap(b.evs) {
		c.drain(thread, b)
	}
	b.mu.Unlock()
}

// drain records the events of thread's buffer b and empties it. Call with b.mu
// held and c.mu not.
func (c *collector) drain(thread int, b *eventBuf) {
	if len(b.evs) == 0 {
		return
	}
	c.mu.Lock()
	for _, p := range b.evs {
		c.record(c.epoch.Add(p.at), p.lat, thread, p.c)
	}
	c.mu.Unlock()
	b.evs = b.evs[:0]
}

// drainAll records what every thread's buffer holds. Call without c.mu.
func (c *collector) drainAll() {
	for i, b := range c.bufs {
		b.mu.Lock()
		c.drain(i, b)
		b.mu.Unlock()
	}
}

// record records an event (see event). Call with mu held.
func (c *collector) record(t time.Time, lat time.Duration, thread int, n counts) {
	if !c.inWindow(t) {
		return
	}
	us := latencyMicros(lat)
	c.each(t, func(a *acc) {
		a.events++
		a.c.add(n)
		if a.hist != nil {
			_ = a.hist.RecordValue(us)
		}
	})
	if c.tot.events == 1 || lat < c.latMin {
		c.latMin = lat
	}
	c.latMax = max(c.latMax, lat)
	c.latSum += lat
	c.perThread[thread]++
	c.threadTime[thread] += lat
	if n.kind < len(c.byKind) {
		k := &c.byKind[n.kind]
		k.events++
		k.c.add(n)
		_ = k.hist.RecordValue(us)
	}
}

// failed records an attempt that failed at t with ignored server error code,
// with the statements that succeeded before the failure.
func (c *collector) failed(t time.Time, n counts, code uint16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.inWindow(t) {
		return
	}
	c.each(t, func(a *acc) {
		a.c.add(n)
		a.ignored++
	})
	c.ignoredBy[code]++
}

// lost records an attempt whose connection broke at t, with the statements that
// succeeded before.
func (c *collector) lost(t time.Time, n counts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inWindow(t) {
		c.each(t, func(a *acc) { a.c.add(n) })
	}
}

// reconnected records a connection re-opened at t.
func (c *collector) reconnected(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inWindow(t) {
		c.each(t, func(a *acc) { a.reconnects++ })
	}
}

// begin opens the window at t.
func (c *collector) begin(t time.Time) {
	c.mu.Lock()
	c.start = t
	c.mu.Unlock()
}

// finish closes the window at t and every interval, and returns the report
// intervals this closed (see flush).
func (c *collector) finish(t time.Time) []Interval {
	// The end first: the threads' buffers may already hold their last events,
	// completed after t.
	c.mu.Lock()
	c.end = t
	c.mu.Unlock()
	c.drainAll()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeReported(t)
}

// flush closes the intervals that ended by now and returns the newly closed ones
// of the report series (per-second when ReportInterval is 1s or 0).
func (c *collector) flush(now time.Time) []Interval {
	c.drainAll()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeReported(now)
}

// closeReported closes up to t and returns what it closed of the report series.
// Call with mu held.
func (c *collector) closeReported(t time.Time) []Interval {
	rs := &c.perReport
	if rs.step == 0 {
		rs = &c.perSecond
	}
	before := rs.closed
	c.closeUpTo(t)
	var out []Interval
	for i := before; i < rs.closed; i++ {
		out = append(out, c.interval(rs, i))
	}
	return out
}

// closeUpTo closes intervals whose end is at or before t (the last one, cut by
// the window's end, when the window is closed). Call with mu held.
func (c *collector) closeUpTo(t time.Time) {
	if c.start.IsZero() {
		return
	}
	for _, s := range []*series{&c.perSecond, &c.perReport} {
		if s.step == 0 {
			continue
		}
		for !s.done {
			from := time.Duration(s.closed) * s.step
			to := from + s.step
			// The window ends a little after Time (timer latency): the last
			// interval absorbs a tail shorter than a tenth of a step.
			if !c.end.IsZero() && c.start.Add(to+s.step/10).After(c.end) {
				to = c.end.Sub(c.start)
			}
			if to <= from || c.start.Add(to).After(t) {
				break
			}
			for len(s.accs) <= s.closed {
				s.accs = append(s.accs, &acc{hist: hdrhistogram.New(histLowest, histHighest, 2)})
			}
			a := s.accs[s.closed]
			last := !c.end.IsZero() && to == c.end.Sub(c.start)
			if last { // fold the absorbed tail's reports in
				for _, b := range s.accs[s.closed+1:] {
					a.merge(b)
				}
				s.accs = s.accs[:s.closed+1]
			}
			var p time.Duration
			if a.hist != nil && a.events > 0 {
				p = time.Duration(a.hist.ValueAtQuantile(c.pct)) * time.Microsecond
			}
			a.hist = nil
			s.ats = append(s.ats, to)
			s.pcts = append(s.pcts, p)
			s.closed++
			s.done = last
		}
	}
}

// interval returns closed interval i of s as rates. Call with mu held.
func (c *collector) interval(s *series, i int) Interval {
	at := s.ats[i]
	from := time.Duration(0)
	if i > 0 {
		from = s.ats[i-1]
	}
	a := s.accs[i]
	iv := Interval{At: at, Length: at - from, P95: s.pcts[i]}
	sec := iv.Length.Seconds()
	iv.TPS = float64(a.events) / sec
	iv.QPS = float64(a.c.total()) / sec
	iv.ReadsPS = float64(a.c.reads) / sec
	iv.WritesPS = float64(a.c.writes) / sec
	iv.OtherPS = float64(a.c.other) / sec
	iv.IgnoredErrorsPS = float64(a.ignored) / sec
	iv.ReconnectsPS = float64(a.reconnects) / sec
	return iv
}

// result builds the Result of a closed window. Call it once the threads have
// stopped, so that events that completed just before the window's end are in.
func (c *collector) result() *Result {
	c.drainAll()
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.end.Sub(c.start)
	r := &Result{
		Driver:        DriverBuiltin,
		Window:        w,
		Events:        c.tot.events,
		Reads:         c.tot.c.reads,
		Writes:        c.tot.c.writes,
		Other:         c.tot.c.other,
		IgnoredErrors: c.tot.ignored,
		Reconnects:    c.tot.reconnects,
		IgnoredByCode: c.ignoredBy,
		ThreadEvents:  c.perThread,
		ThreadTime:    c.threadTime,
		Percentile:    c.pct,
	}
	if w > 0 {
		r.TPS = float64(r.Events) / w.Seconds()
		r.QPS = float64(r.Reads+r.Writes+r.Other) / w.Seconds()
	}
	if r.Events > 0 {
		r.LatencyMin = c.latMin
		r.LatencyMax = c.latMax
		r.LatencyAvg = c.latSum / time.Duration(r.Events)
		r.LatencySum = c.latSum
		r.LatencyPct = time.Duration(c.tot.hist.ValueAtQuantile(c.pct)) * time.Microsecond
		r.LatencyP95 = time.Duration(c.tot.hist.ValueAtQuantile(95)) * time.Microsecond
		r.LatencyP99 = time.Duration(c.tot.hist.ValueAtQuantile(99)) * time.Microsecond
	}
	for i := range c.perSecond.closed {
		r.Intervals = append(r.Intervals, c.interval(&c.perSecond, i))
	}
	for i, name := range c.kindNames {
		k := &c.byKind[i]
		kr := KindResult{Name: name, Events: k.events}
		if w > 0 {
			kr.PerSecond = float64(k.events) / w.Seconds()
		}
		if k.events > 0 {
			kr.LatencyPct = time.Duration(k.hist.ValueAtQuantile(c.pct)) * time.Microsecond
			kr.LatencyP95 = time.Duration(k.hist.ValueAtQuantile(95)) * time.Microsecond
			kr.LatencyP99 = time.Duration(k.hist.ValueAtQuantile(99)) * time.Microsecond
		}
		r.ByKind = append(r.ByKind, kr)
	}
	if c.perReport.step != 0 {
		r.reportStep = c.perReport.step
		for i := range c.perReport.closed {
			r.reportIntervals = append(r.reportIntervals, c.interval(&c.perReport, i))
		}
	}
	return r
}
