package bench_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/perfbisect/perfbisect/bench"

	"github.com/perfbisect/perfbisect/internal/testenv"
	"github.com/perfbisect/perfbisect/internal/testserver"
)

func run(t *testing.T, dsn string, o bench.Options, h bench.Hooks) *bench.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := bench.Run(ctx, dsn, o, h)
	if err != nil {
		t.Fatalf("Run %s: %v", o.Workload, err)
	}
	return r
}

// TestWorkloadCounts runs every workload and checks sysbench's counting per event
// against the statements it must send, and that each thread prepared each
// statement kind once per table and BEGIN and COMMIT once (Com_stmt_prepare), as
// sysbench's oltp_common.lua does, with server-side execution of everything
// (Com_stmt_execute, Com_begin/Com_commit).
func TestWorkloadCounts(t *testing.T) {
	db := admin(t)
	cases := []struct {
		workload            string
		reads, writes, othr int64 // per event; writes -1: writes+other = 1 (oltp_delete)
		kinds               int64
	}{
		{"oltp_read_only", 14, 0, 2, 5},
		{"oltp_read_write", 14, 4, 2, 9},
		{"oltp_write_only", 0, 4, 2, 4},
		{"oltp_point_select", 1, 0, 0, 1},
		{"oltp_update_index", 0, 1, 0, 1},
		{"oltp_update_non_index", 0, 1, 0, 1},
		{"oltp_insert", 0, 1, 0, 1},
		{"oltp_delete", 0, -1, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.workload, func(t *testing.T) {
			o := bench.DefaultOptions()
			o.Workload = c.workload
			o.Tables = 2
			o.TableSize = 1000
			o.Threads = 1 // one thread: no lock conflicts, so counts are exact
			o.Time = 700 * time.Millisecond
			dsn := prepared(t, o)
			names := []string{"Com_stmt_prepare", "Com_stmt_execute", "Com_begin", "Com_commit", "Com_select"}
			before := globalStatus(t, db, names...)
			r := run(t, dsn, o, bench.Hooks{})
			after := globalStatus(t, db, names...)
			d := func(n string) int64 { return after[n] - before[n] }

			if r.Events < 50 {
				t.Fatalf("only %d events in %v", r.Events, r.Window)
			}
			if r.IgnoredErrors != 0 || r.Reconnects != 0 {
				t.Fatalf("one thread had %d ignored errors, %d reconnects", r.IgnoredErrors, r.Reconnects)
			}
			if r.Reads != c.reads*r.Events || r.Other != c.othr*r.Events && c.writes >= 0 {
				t.Errorf("reads %d other %d for %d events, want %d and %d per event", r.Reads, r.Other, r.Events, c.reads, c.othr)
			}
			if c.writes >= 0 && r.Writes != c.writes*r.Events {
				t.Errorf("writes %d for %d events, want %d per event", r.Writes, r.Events, c.writes)
			}
			if c.writes < 0 && (r.Writes+r.Other != r.Events || r.Writes == 0) {
				t.Errorf("oltp_delete: writes %d + other %d, want %d events with some deletes hitting", r.Writes, r.Other, r.Events)
			}
			trx := 2 * boolInt(c.othr == 2) // BEGIN and COMMIT
			if want := (c.kinds*int64(o.Tables) + trx) * int64(o.Threads); d("Com_stmt_prepare") != want {
				t.Errorf("Com_stmt_prepare +%d, want %d ((kinds %d x tables %d + %d) x threads %d)", d("Com_stmt_prepare"), want, c.kinds, o.Tables, trx, o.Threads)
			}
			// Every statement is a server-side execution; the run goes on a little
			// past the window, so the server saw at least what was counted.
			stmts := r.Reads + r.Writes + r.Other
			if d("Com_stmt_execute") < stmts {
				t.Errorf("Com_stmt_execute +%d < %d catalogue statements counted", d("Com_stmt_execute"), stmts)
			}
			if c.othr == 2 && (d("Com_begin") < r.Events || d("Com_commit") < r.Events) {
				t.Errorf("Com_begin +%d Com_commit +%d for %d events: BEGIN/COMMIT not sent", d("Com_begin"), d("Com_commit"), r.Events)
			}
			if c.othr == 0 && d("Com_commit") > 5 {
				t.Errorf("autocommit workload sent %d COMMITs", d("Com_commit"))
			}
			if r.TPS <= 0 || r.QPS < r.TPS || r.LatencyMin <= 0 || r.LatencyMin > r.LatencyAvg ||
				r.LatencyAvg > r.LatencyMax || r.LatencyPct < r.LatencyMin || r.LatencyPct > r.LatencyMax+r.LatencyMax/100 {
				t.Errorf("inconsistent numbers: tps %.1f qps %.1f latency min %v avg %v pct %v max %v",
					r.TPS, r.QPS, r.LatencyMin, r.LatencyAvg, r.LatencyPct, r.LatencyMax)
			}
			// p95 and p99 come from the same histogram: ordered, within the
			// exact extremes (3 significant digits), p95 equal to the
			// workload's percentile at its default of 95.
			if r.LatencyP95 < r.LatencyMin-r.LatencyMin/100 || r.LatencyP95 > r.LatencyP99 || r.LatencyP99 > r.LatencyMax+r.LatencyMax/100 ||
				(r.Percentile == 95 && r.LatencyP95 != r.LatencyPct) {
				t.Errorf("p95 %v p99 %v (pct %v at %g) outside min %v .. max %v", r.LatencyP95, r.LatencyP99, r.LatencyPct, r.Percentile, r.LatencyMin, r.LatencyMax)
			}
		})
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestProtocol reads the general log of a short oltp_read_only run with two
// threads: the five statements, BEGIN and COMMIT are prepared once per
// connection (command Prepare), every SELECT, BEGIN and COMMIT is an Execute.
func TestProtocol(t *testing.T) {
	db := admin(t)
	o := bench.DefaultOptions()
	o.Threads = 2
	o.Time = 300 * time.Millisecond
	r := loggedRun(t, db, o)
	counts := map[string]int64{}
	rows, err := db.Query(`SELECT command_type,
		CASE WHEN argument LIKE 'SELECT%FROM sbtest%' THEN 'select' WHEN argument IN ('BEGIN', 'COMMIT') THEN 'trx' ELSE 'other' END, COUNT(*)
		FROM mysql.general_log GROUP BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var cmd, kind string
		var n int64
		rows.Scan(&cmd, &kind, &n)
		counts[cmd+"/"+kind] = n
	}
	rows.Close()
	if counts["Prepare/select"] != 5*2 {
		t.Errorf("%d SELECTs prepared, want 5 kinds x 2 threads = 10 (log: %v)", counts["Prepare/select"], counts)
	}
	if counts["Execute/select"] < 14*r.Events {
		t.Errorf("%d SELECT executions for %d events, want >= 14 per event", counts["Execute/select"], r.Events)
	}
	if counts["Query/select"] != 0 {
		t.Errorf("%d SELECTs sent as text: client-side interpolation?", counts["Query/select"])
	}
	if counts["Execute/trx"] < 2*r.Events || counts["Prepare/trx"] != 2*2 || counts["Query/trx"] != 0 {
		t.Errorf("BEGIN/COMMIT: %d executions, %d prepared, %d as text; want >= %d executions of 2 x 2 threads prepared", counts["Execute/trx"], counts["Prepare/trx"], counts["Query/trx"], 2*r.Events)
	}
}

// TestWarmupExcluded: with a warm-up, the result holds only what the server did
// between MeasureStart and MeasureEnd (COMMITs counted at the hooks), and the
// warm-up's events are in no number.
func TestWarmupExcluded(t *testing.T) {
	db := admin(t)
	o := bench.DefaultOptions()
	o.Threads = 2
	o.Warmup = time.Second
	o.Time = time.Second
	dsn := prepared(t, o)
	var start, end map[string]int64
	var tStart, tEnd time.Time
	h := bench.Hooks{
		MeasureStart: func() { tStart = time.Now(); start = globalStatus(t, db, "Com_commit") },
		MeasureEnd:   func() { end = globalStatus(t, db, "Com_commit"); tEnd = time.Now() },
	}
	begin := time.Now()
	before := globalStatus(t, db, "Com_commit")
	r := run(t, dsn, o, h)
	after := globalStatus(t, db, "Com_commit")
	if start == nil || end == nil {
		t.Fatal("hooks not called")
	}
	if w := tStart.Sub(begin); w < o.Warmup {
		t.Errorf("MeasureStart after %v, before the %v warm-up ended", w, o.Warmup)
	}
	if d := tEnd.Sub(tStart); d < o.Time || d > o.Time+200*time.Millisecond {
		t.Errorf("hooks %v apart, want the %v window", d, o.Time)
	}
	if r.Window < o.Time || r.Window > o.Time+50*time.Millisecond {
		t.Errorf("window %v, want %v", r.Window, o.Time)
	}
	inWindow := end["Com_commit"] - start["Com_commit"]
	total := after["Com_commit"] - before["Com_commit"]
	// Each thread may have one event straddling each edge.
	if diff := r.Events - inWindow; diff < -2*int64(o.Threads) || diff > 2*int64(o.Threads) {
		t.Errorf("%d events counted, server committed %d inside the window", r.Events, inWindow)
	}
	if warm := total - inWindow; warm < r.Events/2 {
		t.Errorf("only %d commits outside the window for %d inside: was there a warm-up?", warm, r.Events)
	}
	if len(r.Intervals) != 1 || r.Intervals[0].At != r.Window {
		t.Errorf("intervals %+v, want one ending at the window's end %v", r.Intervals, r.Window)
	}
	if r.Intervals[0].TPS < 0.9*r.TPS || r.Intervals[0].TPS > 1.1*r.TPS {
		t.Errorf("the only interval has tps %.1f, the run %.1f", r.Intervals[0].TPS, r.TPS)
	}
}

// TestIntervals: per-second series over a 3 s window, and Hooks.Interval called
// live at the report interval.
func TestIntervals(t *testing.T) {
	o := bench.DefaultOptions()
	o.Workload = "oltp_point_select"
	o.Time = 3 * time.Second
	o.ReportInterval = time.Second
	dsn := prepared(t, o)
	var live []time.Duration
	var mu sync.Mutex
	r := run(t, dsn, o, bench.Hooks{Interval: func(iv bench.Interval) {
		mu.Lock()
		live = append(live, iv.At)
		mu.Unlock()
	}})
	if len(r.Intervals) != 3 {
		t.Fatalf("%d intervals for a 3 s window: %+v", len(r.Intervals), r.Intervals)
	}
	var events float64
	for i, iv := range r.Intervals {
		if want := time.Duration(i+1) * time.Second; iv.At < want || iv.At > want+50*time.Millisecond {
			t.Errorf("interval %d ends at %v, want %v", i, iv.At, want)
		}
		if iv.TPS <= 0 || iv.P95 <= 0 || iv.QPS != iv.ReadsPS {
			t.Errorf("interval %d: %+v", i, iv)
		}
		events += iv.TPS * iv.Length.Seconds()
	}
	if d := events - float64(r.Events); d < -1 || d > 1 {
		t.Errorf("intervals hold %.1f events, the run %d", events, r.Events)
	}
	if len(live) != 3 {
		t.Errorf("Hooks.Interval called for %v, want 3 intervals", live)
	}
	var b strings.Builder
	if err := r.WriteText(&b, o); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "] thds: 1 tps: "); n != 3 {
		t.Errorf("report has %d interval lines, want 3:\n%s", n, b.String())
	}
}

// TestDeadlockRetried provokes deadlocks (four threads writing the same four rows
// in random order) and checks that 1213 is retried and counted, and that every
// retried event was rolled back: each event deletes and re-inserts one id, so the
// table keeps exactly its rows.
func TestDeadlockRetried(t *testing.T) {
	o := bench.DefaultOptions()
	o.Workload = "oltp_write_only"
	o.TableSize = 4
	o.Threads = 4
	o.RandType = "uniform"
	o.Time = 1500 * time.Millisecond
	dsn := prepared(t, o)
	r := run(t, dsn, o, bench.Hooks{})
	if r.IgnoredByCode[1213] == 0 {
		t.Fatalf("no deadlock retried in %d events (ignored: %v)", r.Events, r.IgnoredByCode)
	}
	if r.IgnoredErrors != sum(r.IgnoredByCode) {
		t.Errorf("IgnoredErrors %d, by code %v", r.IgnoredErrors, r.IgnoredByCode)
	}
	if r.Events < 20 {
		t.Errorf("only %d events completed", r.Events)
	}
	db := admin(t)
	if n := testserver.QueryInt(t, db, fmt.Sprintf("SELECT COUNT(*) FROM `%s`.sbtest1", dbName(t))); n != 4 {
		t.Errorf("%d rows after the run, want 4: a failed event was not rolled back", n)
	}
	var b strings.Builder
	r.WriteText(&b, o)
	if !strings.Contains(b.String(), "1213: ") {
		t.Errorf("report does not list ignored errors by code:\n%s", b.String())
	}
}

func sum(m map[uint16]int64) (s int64) {
	for _, v := range m {
		s += v
	}
	return s
}

// lockRow holds a write lock on sbtest1 id 1 of test t's database until release.
func lockRow(t *testing.T) (release func()) {
	t.Helper()
	db, err := sql.Open("mysql", testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("SELECT * FROM sbtest1 WHERE id = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { tx.Rollback(); db.Close() }) }
	t.Cleanup(release)
	return release
}

// TestLockWaitTimeout: 1205 is in the default ignore list; with it removed the
// same error stops the run naming the statement and the server's message.
func TestLockWaitTimeout(t *testing.T) {
	o := bench.DefaultOptions()
	o.Workload = "oltp_update_index"
	o.TableSize = 1 // every id is 1
	o.Time = 2500 * time.Millisecond
	prepared(t, o)
	dsn := testDSN(t) + "?innodb_lock_wait_timeout=1"

	release := lockRow(t)
	time.AfterFunc(1500*time.Millisecond, release)
	r := run(t, dsn, o, bench.Hooks{})
	if r.IgnoredByCode[1205] < 1 || r.Events == 0 {
		t.Errorf("ignored %v, %d events: want 1205 retried while the row was locked, then events", r.IgnoredByCode, r.Events)
	}

	o.IgnoreErrors = nil
	lockRow(t)
	_, err := bench.Run(context.Background(), dsn, o, bench.Hooks{})
	var se *bench.StatementError
	if !errors.As(err, &se) || se.Statement != "index_updates" || !strings.Contains(err.Error(), "Lock wait timeout") ||
		!strings.Contains(err.Error(), "UPDATE sbtest1 SET k=k+1 WHERE id=?") {
		t.Errorf("got %v, want a StatementError naming index_updates and 'Lock wait timeout'", err)
	}
}

// TestCancel: cancelling the context stops a run at once, even with a thread
// blocked in a lock wait (50 s by default).
func TestCancel(t *testing.T) {
	o := bench.DefaultOptions()
	o.Workload = "oltp_update_index"
	o.TableSize = 1
	o.Threads = 2
	o.Time = time.Minute
	dsn := prepared(t, o)
	lockRow(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	began := time.Now()
	_, err := bench.Run(ctx, dsn, o, bench.Hooks{})
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("Run returned %v after the cancel", took-500*time.Millisecond)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	// The server is not left with the blocked statements.
	db := admin(t)
	deadline := time.Now().Add(3 * time.Second)
	for {
		n := testserver.QueryInt(t, db, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = ? AND INFO LIKE 'UPDATE%'", dbName(t))
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			rows, _ := db.Query("SELECT ID, COMMAND, TIME, STATE, INFO FROM information_schema.PROCESSLIST")
			for rows.Next() {
				var id, cmd, tm, st, info sql.NullString
				rows.Scan(&id, &cmd, &tm, &st, &info)
				t.Logf("%v %v %v %v %v", id.String, cmd.String, tm.String, st.String, info.String)
			}
			rows.Close()
			t.Errorf("%d UPDATEs still running on the server after the cancel", n)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMissingTables: Run without Prepare fails before any event, naming the
// statement and the server's message.
func TestMissingTables(t *testing.T) {
	testenv.Require(t, testenv.Server)
	o := bench.DefaultOptions()
	o.Time = time.Second
	if _, err := bench.Run(context.Background(), testserver.Server(t).DSN("mysql"), o, bench.Hooks{MeasureStart: func() { t.Error("MeasureStart called") }}); err == nil ||
		!strings.Contains(err.Error(), "prepare point_selects") || !strings.Contains(err.Error(), "sbtest1' doesn't exist") {
		t.Errorf("got %v, want a prepare error for point_selects on a missing sbtest1", err)
	}
}

// TestReconnect kills the run's connections on the server mid-run: each thread
// reconnects, re-prepares and goes on; the reconnects are counted.
func TestReconnect(t *testing.T) {
	testenv.Require(t, testenv.Server)
	o := bench.DefaultOptions()
	o.Threads = 2
	o.Time = 2 * time.Second
	dsn := prepared(t, o)
	db := admin(t)
	killed := make(chan int, 1)
	time.AfterFunc(700*time.Millisecond, func() { killed <- killConnectionsOf(db, dbName(t)) })
	r := run(t, dsn, o, bench.Hooks{})
	n := <-killed
	if n != o.Threads {
		t.Fatalf("killed %d connections, want %d", n, o.Threads)
	}
	if r.Reconnects != int64(n) {
		t.Errorf("%d reconnects after %d connections were killed", r.Reconnects, n)
	}
	if last := r.Intervals[len(r.Intervals)-1]; last.TPS <= 0 {
		t.Errorf("no events after the reconnect: %+v", last)
	}
}

// proxy forwards TCP connections to the test server's socket until stopped.
type proxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startProxy(t *testing.T) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("unix", testserver.Server(t).Socket())
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
	t.Cleanup(p.stop)
	return p
}

// stop refuses new connections and cuts the open ones, as a dead server does.
func (p *proxy) stop() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

// TestConnectionLost: when the server goes away for good, Run gives up after a
// bounded number of reconnect attempts with an error wrapping ErrConnectionLost.
func TestConnectionLost(t *testing.T) {
	o := bench.DefaultOptions()
	o.Threads = 2
	o.Time = time.Minute
	prepared(t, o)
	p := startProxy(t)
	cfg, err := mysql.ParseDSN(testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Net, cfg.Addr = "tcp", p.ln.Addr().String()
	stopped := make(chan time.Time, 1)
	time.AfterFunc(500*time.Millisecond, func() { stopped <- time.Now(); p.stop() })
	_, err = bench.Run(context.Background(), cfg.FormatDSN(), o, bench.Hooks{})
	took := time.Since(<-stopped)
	if !errors.Is(err, bench.ErrConnectionLost) {
		t.Fatalf("got %v, want ErrConnectionLost", err)
	}
	if took > 8*time.Second {
		t.Errorf("gave up %v after the server went away", took)
	}
	t.Logf("%v after %v", err, took)
}

// killConnectionsOf kills the server connections using database schema (the
// workload's threads), other than db's own, and returns how many it killed. The
// query is sent as text: one with arguments would be a prepared statement and
// count in Com_stmt_prepare.
func killConnectionsOf(db *sql.DB, schema string) int {
	rows, err := db.Query(fmt.Sprintf("SELECT ID FROM information_schema.PROCESSLIST WHERE DB = '%s' AND ID <> CONNECTION_ID()", schema))
	if err != nil {
		return 0
	}
	var ids []int64
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	n := 0
	for _, id := range ids {
		if _, err := db.Exec(fmt.Sprintf("KILL %d", id)); err == nil {
			n++
		}
	}
	return n
}

// TestUnpreparableStatementSentAsText: a statement the server refuses to
// prepare (ER_UNSUPPORTED_PS, as MariaDB 10.0 refuses BEGIN; here a PREPARE,
// which no server prepares) is sent as text at every execution, as sysbench
// does, the rest stay prepared, and the result names it.
func TestUnpreparableStatementSentAsText(t *testing.T) {
	const refused = "PREPARE pb_begin FROM 'SELECT 1'"
	defer bench.SetBeginSQL(refused)()
	db := admin(t)
	o := bench.DefaultOptions()
	o.Threads = 2
	o.Time = 300 * time.Millisecond
	r := loggedRun(t, db, o)
	if len(r.Emulated) != 1 || r.Emulated[0] != refused {
		t.Errorf("Result.Emulated = %q, want [%q]", r.Emulated, refused)
	}
	var asText, executed int64
	if err := db.QueryRow(`SELECT COALESCE(SUM(command_type = 'Query' AND argument = ?), 0),
		COALESCE(SUM(command_type = 'Execute' AND argument LIKE 'SELECT%FROM sbtest%'), 0) FROM mysql.general_log`, refused).Scan(&asText, &executed); err != nil {
		t.Fatal(err)
	}
	if asText < r.Events {
		t.Errorf("the refused statement was sent as text %d times for %d events", asText, r.Events)
	}
	if executed < 14*r.Events {
		t.Errorf("%d prepared SELECT executions for %d events: the other statements are not prepared any more", executed, r.Events)
	}
	var text strings.Builder
	if err := r.WriteText(&text, o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "sent as text:") || !strings.Contains(text.String(), refused) {
		t.Errorf("the report does not say what was sent as text:\n%s", text.String())
	}
	js, _ := r.MarshalJSON()
	if !strings.Contains(string(js), `"sent_as_text":["PREPARE pb_begin`) {
		t.Errorf("JSON: %s", js)
	}
}
