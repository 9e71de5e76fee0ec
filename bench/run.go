package bench

import (
	"context"
	"database/sql/driver"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/perfbisect/perfbisect/bench/dial"
)

// Hooks are called by Run's coordinating goroutine at the edges of the measured
// window; nil functions are skipped. They should return quickly: the window is
// timed around them.
type Hooks struct {
	// MeasureStart is called when the warm-up is over, just before the window
	// opens (the caller reads server CPU time or GLOBAL STATUS here).
	MeasureStart func()
	// MeasureEnd is called just after the window closes, while the threads are
	// still connected. It is not called when the run fails before.
	MeasureEnd func()
	// Interval, if set, is called after each Options.ReportInterval of the window
	// with that interval's numbers (for live progress); never when ReportInterval
	// is 0.
	Interval func(Interval)
	// Statements, when set, times every statement that completes in the
	// window and, after it, EXPLAINs a sample of each on the server
	// (Result.Statements): perfbisect explain's profiled runs, never a
	// verdict's. A workload run by sysbench leaves Result.Statements empty.
	Statements bool
}

// Tuning of Run's failure handling.
const (
	// reconnectTries bounds the attempts to re-open a lost connection; with the
	// backoff below they span about 3 seconds.
	reconnectTries   = 8
	reconnectBackoff = 25 * time.Millisecond // doubled after each failed try, up to 1s
	// stopGrace is how long threads may finish their current event after the
	// window; then their queries are cancelled.
	stopGrace = 5 * time.Second
	// flushLag is how long after an interval's end it is closed, so that events
	// that completed just before the edge are in.
	flushLag = 20 * time.Millisecond
	// yieldBudget: see runner.loop.
	yieldBudget = 8 * time.Millisecond
)

// Run runs workload o.Workload against the tables Prepare made, like sysbench's
// run command, and returns the numbers of the measured window.
//
// Each of o.Threads threads opens its own connection and prepares the workload's
// statements once per table on it (server-side prepared statements, reused for
// every event; BEGIN and COMMIT are plain statements). When all are ready, the
// threads run events back to back for o.Warmup, then h.MeasureStart is called and
// the window of o.Time opens, then it closes and h.MeasureEnd is called. Threads
// finish their current event and disconnect.
//
// Errors: a statement failing with a server error in o.IgnoreErrors rolls the
// event back and retries it with fresh values (Result.IgnoredErrors). A lost
// connection is re-opened, with its statements, and the event retried
// (Result.Reconnects); when it cannot be re-opened within a few seconds, Run
// returns an error wrapping ErrConnectionLost. Any other error stops the run with
// a *StatementError naming the thread, statement, arguments and the server's
// message. Cancelling ctx stops every query at once and Run returns ctx's error.
//
// Run raises the process's GOMAXPROCS to o.Threads+1 while it runs (see below)
// and restores it; runs in one process should not overlap.
func Run(ctx context.Context, dsn string, o Options, h Hooks) (*Result, error) {
	return run(ctx, dsn, o, nil, h)
}

// A program is a workload the engine runs other than the OLTP catalogue's
// (a SQL workload file): it prepares its statements on every new session
// and runs one event at a time. It is shared by the threads: read-only.
type program interface {
	// prepare runs the program's per-connection statements on s and
	// prepares its statements there (session.prepareNamed).
	prepare(ctx context.Context, s *session) error
	// event runs one event on thread t, counting its statements into c
	// and setting c.kind to the transaction it ran.
	event(ctx context.Context, t *thread, c *counts) error
	// kinds names the program's transactions, by c.kind.
	kinds() []string
}

// run is Run of o.Workload, or of prog when it is not nil (o then gives
// the threads, the window, the distributions and the errors to ignore).
func run(ctx context.Context, dsn string, o Options, prog program, h Hooks) (*Result, error) {
	validate := o.Validate
	if prog != nil {
		validate = o.validate
	}
	if err := validate(); err != nil {
		return nil, err
	}
	// A P per thread, and one to spare for the coordinator: a goroutine in a
	// blocking system call keeps its P, and when no P is idle the runtime takes
	// it away and hands it to another OS thread, which costs two context
	// switches per statement on a small machine.
	if want := o.Threads + 1; runtime.GOMAXPROCS(0) < want {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(want))
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	r, err := newRunner(runCtx, cancel, dsn, &o, prog)
	if err != nil {
		return nil, err
	}
	r.timeStatements = h.Statements
	fail := func(err error) (*Result, error) {
		r.abort()
		return nil, fmt.Errorf("%s: %w", o.Workload, err)
	}
	// Connect and prepare every thread before any event runs.
	if err := r.startThreads(ctx, runCtx); err != nil {
		return fail(err)
	}
	if err := r.window(ctx, h); err != nil {
		return fail(err)
	}
	// Let threads finish their current event, then stop what is left.
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stopGrace):
		r.abort()
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	select {
	case err := <-r.errs:
		// An event that was running when the window closed failed for real (a
		// lost server, a broken statement): the run is not trustworthy.
		return nil, fmt.Errorf("%s: after the measured window: %w", o.Workload, err)
	default:
	}
	res := r.col.result()
	r.mu.Lock()
	res.Emulated = slices.Sorted(maps.Keys(r.emulated))
	r.mu.Unlock()
	if r.timeStatements {
		res.Statements = statementTimes(r.clocks)
		ExplainSamples(ctx, r.connector, res.Statements)
	}
	return res, nil
}

// newRunner connects nothing yet: it makes the run's connector (whose
// connections runCtx's end closes: statements run without cancellation, see
// package dial) and its collector.
func newRunner(runCtx context.Context, cancel func(), dsn string, o *Options, prog program) (*runner, error) {
	conns := dial.NewSet()
	connector, cfg, err := dial.Connector(dsn, conns)
	if err != nil {
		return nil, err
	}
	go func() {
		<-runCtx.Done()
		conns.CloseAll()
	}()
	wl := workloads[o.Workload]
	if prog != nil {
		wl = workload{trx: true} // BEGIN and COMMIT prepared; the program says when
	}
	r := &runner{o: o, connector: connector, cfg: cfg, conns: conns, cancel: cancel, wl: wl, kinds: wl.stmtKinds(o),
		col: newCollector(o), errs: make(chan error, o.Threads), live: map[int]int64{}, prog: prog, start: make(chan struct{})}
	if prog != nil {
		r.col = newCollector(o, prog.kinds()...)
	}
	return r, nil
}

// startThreads starts the threads, each connecting and preparing its
// statements and then waiting for the start; it returns once all are
// ready. Errors: the first thread's that could not, or ctx's.
func (r *runner) startThreads(ctx, runCtx context.Context) error {
	seed := r.o.seed()
	uniq := newUniqueSeq(seed)
	groups := r.wl.activeGroups(r.o)
	ready := make(chan error, r.o.Threads)
	for i := range r.o.Threads {
		t := &thread{id: i, o: r.o, wl: r.wl, groups: groups, trx: r.wl.trx && !r.o.SkipTrx, prog: r.prog,
			rnd: NewRand(*r.o, seed, streamThread+uint64(i)), uniq: uniq}
		if r.timeStatements {
			t.clock = &stmtClock{open: &r.timing, by: map[string]*stmtAcc{}}
			r.clocks = append(r.clocks, t.clock)
		}
		r.wg.Go(func() {
			err := r.open(runCtx, t)
			ready <- err
			if err != nil {
				return
			}
			defer func() { r.close(t, runCtx.Err() != nil) }()
			select {
			case <-r.start:
			case <-runCtx.Done():
				return
			}
			if err := r.loop(runCtx, t); err != nil {
				r.errs <- err
			}
		})
	}
	for range r.o.Threads {
		if err := <-ready; err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("connect and prepare statements: %w", err)
		}
	}
	return nil
}

// window lets the threads go, waits out the warm-up, and measures the
// window, calling h's hooks at its edges and on each second's interval.
func (r *runner) window(ctx context.Context, h Hooks) error {
	close(r.start)
	if err := r.sleepUntil(ctx, time.Now().Add(r.o.Warmup)); err != nil {
		return err
	}
	if h.MeasureStart != nil {
		h.MeasureStart()
	}
	s := time.Now()
	r.col.begin(s)
	r.timing.Store(true)
	report := func(ivs []Interval) {
		if h.Interval != nil && r.o.ReportInterval > 0 {
			for _, iv := range ivs {
				h.Interval(iv)
			}
		}
	}
	for k := 1; time.Duration(k)*time.Second < r.o.Time; k++ {
		if err := r.sleepUntil(ctx, s.Add(time.Duration(k)*time.Second+flushLag)); err != nil {
			return err
		}
		report(r.col.flush(time.Now()))
	}
	if err := r.sleepUntil(ctx, s.Add(r.o.Time)); err != nil {
		return err
	}
	r.timing.Store(false)
	r.stop.Store(true)
	last := r.col.finish(time.Now())
	if h.MeasureEnd != nil {
		h.MeasureEnd()
	}
	report(last)
	return nil
}

// abort stops everything at once: connections closed on the client side, and
// the server's threads for them killed so that nothing keeps running there
// (a statement in a lock wait does not notice its client is gone).
func (r *runner) abort() {
	r.cancel()
	r.conns.CloseAll()
	r.killServerThreads()
	r.wg.Wait()
}

// runner is the state a Run shares between its threads.
type runner struct {
	o         *Options
	connector driver.Connector
	cfg       *mysql.Config
	conns     *dial.Set          // the run's connections
	cancel    context.CancelFunc // ends the run's context
	wl        workload
	start     chan struct{}  // closed when the threads may run events
	wg        sync.WaitGroup // the threads
	kinds     []stmtKind
	col       *collector
	stop      atomic.Bool // the window closed: threads finish their event and leave
	errs      chan error  // threads' fatal errors
	prog      program     // nil for the OLTP catalogue's workloads
	// timeStatements is Hooks.Statements; timing is true while the window
	// is open, and clocks are the threads' (stmtClock).
	timeStatements bool
	timing         atomic.Bool
	clocks         []*stmtClock

	mu   sync.Mutex
	live map[int]int64 // server connection id of each thread's session, unless closed cleanly
	// emulated are the statements the server refused to prepare, sent as
	// text (Result.Emulated).
	emulated map[string]bool
}

// open gives t a new session and records its server connection id.
func (r *runner) open(ctx context.Context, t *thread) error {
	var legacyTable string
	if t.wl.legacy {
		legacyTable = r.o.OLTPTableName
	}
	s, err := openSession(ctx, r.connector, t.id, r.o.Tables, r.kinds, t.trx, legacyTable)
	if err != nil {
		return err
	}
	if r.prog != nil {
		if err := r.prog.prepare(ctx, s); err != nil {
			s.close(true)
			return err
		}
	}
	s.clock = t.clock
	t.sess = s
	r.mu.Lock()
	r.live[t.id] = s.connID
	for _, name := range s.emulated {
		if r.emulated == nil {
			r.emulated = map[string]bool{}
		}
		r.emulated[name] = true
	}
	r.mu.Unlock()
	return nil
}

// close releases t's session, if it has one. A session dropped as broken stays
// in r.live: its server thread may still be running a statement.
func (r *runner) close(t *thread, broken bool) {
	if t.sess == nil {
		return
	}
	t.sess.close(broken)
	if !broken {
		r.mu.Lock()
		delete(r.live, t.id)
		r.mu.Unlock()
	}
	t.sess = nil
}

// killServerThreads kills the server threads of the sessions not closed
// cleanly (see dial.Kill).
func (r *runner) killServerThreads() {
	r.mu.Lock()
	ids := slices.Collect(maps.Values(r.live))
	r.mu.Unlock()
	dial.Kill(r.cfg, ids)
}

// sleepUntil waits until t, or returns the first thread error or ctx's error.
func (r *runner) sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case err := <-r.errs:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loop runs events on thread t until the window closes. It returns nil when
// stopped, ctx's error when cancelled before that, and the error that ended the
// run otherwise.
//
// Statements run with qctx, ctx without its cancellation: a cancelled run closes
// its connections instead (see package dial).
func (r *runner) loop(ctx context.Context, t *thread) error {
	qctx := context.WithoutCancel(ctx)
	// Every thread waits for the server in blocking system calls (package dial). The
	// runtime's monitor takes the P of a goroutine that has not been through the
	// scheduler for 10ms (forced preemption) even when it sits in a system call,
	// and then wakes up every 20µs for a while: on a 2-CPU machine that alone
	// cost a third of oltp_read_only's throughput. Yielding keeps the
	// goroutine's scheduling tick fresh, but each yield also wakes an OS thread
	// for the spare P (an inter-processor interrupt, expensive in a VM): yielding
	// every 2 ms cost 1 to 1.5 interrupts per oltp_read_only transaction with 2
	// threads on 2 CPUs, against 0.2 with this budget and none for sysbench. So a
	// thread yields before an event only when the time since its last yield plus
	// its last event's latency exceeds yieldBudget. A heuristic, not a bound: an
	// event more than 2 ms longer than the one before it still passes the 10 ms.
	yielded := time.Now()
	var last time.Duration
	for !r.stop.Load() {
		began := time.Now()
		if began.Sub(yielded)+last > yieldBudget {
			runtime.Gosched()
			yielded = began
		}
		for {
			var c counts
			err := t.event(qctx, &c)
			now := time.Now()
			if err == nil {
				last = now.Sub(began)
				r.col.event(now, last, t.id, c)
				break
			}
			if ctx.Err() != nil {
				if r.stop.Load() {
					return nil
				}
				return ctx.Err()
			}
			class, code := classify(err, r.o)
			switch class {
			case errIgnorable:
				r.col.failed(now, c, code)
				if rerr := t.sess.plain(qctx, sqlRollback); rerr != nil {
					if cl, _ := classify(rerr, r.o); cl != errLost {
						return fmt.Errorf("roll back after %v: %w", err, rerr)
					}
					if err := r.reconnect(ctx, t, rerr); err != nil {
						return r.stopped(ctx, err)
					}
					r.col.reconnected(time.Now())
				}
			case errLost:
				r.col.lost(now, c)
				if err := r.reconnect(ctx, t, err); err != nil {
					return r.stopped(ctx, err)
				}
				r.col.reconnected(time.Now())
			default:
				return err
			}
			if r.stop.Load() {
				return nil
			}
		}
	}
	return nil
}

// stopped turns err into nil when it only says that the run was stopped after
// its window (threads still busy after stopGrace are cancelled).
func (r *runner) stopped(ctx context.Context, err error) error {
	if r.stop.Load() && ctx.Err() != nil {
		return nil
	}
	return err
}

// reconnect replaces t's broken session with a new one, trying reconnectTries
// times with a doubling backoff. lost is the error that broke the old one.
func (r *runner) reconnect(ctx context.Context, t *thread, lost error) error {
	r.close(t, true)
	began := time.Now()
	wait := reconnectBackoff
	var last error
	tries := 0
	for try := 1; try <= reconnectTries; try++ {
		tries = try
		err := r.open(ctx, t)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		last = err
		if cl, _ := classify(err, r.o); cl != errLost {
			// The server answers but refuses (privileges, a dropped table).
			return fmt.Errorf("reconnect after %v: %w", lost, err)
		}
		if try == reconnectTries {
			break
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		wait = min(2*wait, time.Second)
	}
	return fmt.Errorf("%w: %v; %d reconnect attempts in %.1fs failed, the last with: %w",
		ErrConnectionLost, lost, tries, time.Since(began).Seconds(), last)
}
