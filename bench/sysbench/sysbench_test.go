package sysbench_test

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bench/sysbench"

	"github.com/perfbisect/perfbisect/internal/testenv"
	"github.com/perfbisect/perfbisect/internal/testserver"
)

// TestParseSysbenchReport reads a real sysbench 1.0.20 run (oltp_read_write, 2
// threads, --time=4 --report-checkpoints=2 --percentile=99, captured on this
// project's test machine): the numbers come from the last report (the window
// after the 2 s checkpoint), the intervals from the lines after it.
func TestParseSysbenchReport(t *testing.T) {
	out, err := os.ReadFile("testdata/sysbench-1.0.20-rw-checkpoint.txt")
	if err != nil {
		t.Fatal(err)
	}
	o := bench.DefaultOptions()
	o.Workload, o.Threads, o.Warmup, o.Time, o.Percentile = "oltp_read_write", 2, 2*time.Second, 2*time.Second, 99
	r, err := sysbench.ParseReport(out, o)
	if err != nil {
		t.Fatal(err)
	}
	// The values of the file's final report (not its checkpoint's).
	if r.Driver != "sysbench 1.0.20" || r.Events != 5132 || r.Reads != 71846 || r.Writes != 20530 || r.Other != 10263 ||
		r.TPS != 2564.53 || r.QPS != 51290.02 || r.IgnoredErrors != 1 || r.Reconnects != 0 {
		t.Errorf("parsed %+v", r)
	}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	if r.LatencyMin != ms(0.64) || r.LatencyAvg != ms(0.78) || r.LatencyMax != ms(5.81) || r.LatencyPct != ms(1.86) ||
		r.LatencyP99 != r.LatencyPct || r.LatencyP95 != 0 || r.LatencySum != ms(3995.86) {
		t.Errorf("latencies min %v avg %v max %v pct %v p95 %v p99 %v sum %v", r.LatencyMin, r.LatencyAvg, r.LatencyMax, r.LatencyPct, r.LatencyP95, r.LatencyP99, r.LatencySum)
	}
	if w := r.Window.Seconds(); math.Abs(w-5132/2564.53) > 1e-6 {
		t.Errorf("window %v, want events/tps", r.Window)
	}
	if len(r.Intervals) != 2 || r.Intervals[0].At != time.Second || r.Intervals[0].TPS != 2199.41 ||
		r.Intervals[0].IgnoredErrorsPS != 1 || r.Intervals[1].P95 != ms(0.86) || r.Intervals[1].WritesPS != 11732.18 {
		t.Errorf("intervals %+v, want the 3s and 4s lines as 1s and 2s of the window", r.Intervals)
	}
	var text strings.Builder
	if err := r.WriteText(&text, o); err != nil || !strings.Contains(text.String(), "sysbench 1.0.20 oltp_read_write") ||
		strings.Contains(text.String(), "Threads fairness") {
		t.Errorf("text report (%v):\n%s", err, text.String())
	}
	if _, err := sysbench.ParseReport(out[:len(out)/3], o); err == nil {
		t.Error("a report cut before its end parsed")
	}
}

func TestSysbenchArgs(t *testing.T) {
	o := bench.DefaultOptions()
	o.Warmup, o.Time, o.Threads = 5*time.Second, 30*time.Second, 4
	conn := bench.Connection{Host: "db1.example", Port: 3307, User: "u", Password: "p", DB: "d"}
	args, err := sysbench.Args(o, conn, "run")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"oltp_read_only", "--mysql-host=db1.example", "--mysql-port=3307", "--mysql-user=u",
		"--mysql-password=p", "--mysql-db=d", "--threads=4", "--time=35", "--report-checkpoints=5", "--rand-type=special",
		"--rand-seed=1", "--mysql-ignore-errors=1213,1020,1205", "--percentile=95", "--range-selects=on", "run"} {
		if !slices.Contains(args, want) {
			t.Errorf("args miss %s: %v", want, args)
		}
	}
	if args[0] != "oltp_read_only" || args[len(args)-1] != "run" {
		t.Errorf("args %v: want the workload first and the command last", args)
	}
	conn.Socket = "/tmp/s.sock"
	args, _ = sysbench.Args(o, conn, "prepare")
	if !slices.Contains(args, "--mysql-socket=/tmp/s.sock") || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--mysql-host") || strings.HasPrefix(a, "--time") }) {
		t.Errorf("prepare with a socket: %v", args)
	}
	for _, bad := range []func(o *bench.Options){
		func(o *bench.Options) { o.RandType = "zipfian" },
		func(o *bench.Options) { o.CreateTableOptions = "ROW_FORMAT=COMPRESSED" },
		func(o *bench.Options) { o.Time = 1500 * time.Millisecond },
		func(o *bench.Options) { o.Workload = "oltp_legacy" },
	} {
		o := bench.DefaultOptions()
		bad(&o)
		if _, err := sysbench.Args(o, conn, "run"); !errors.Is(err, sysbench.ErrNotInSysbench) {
			t.Errorf("%+v: %v, want ErrNotInSysbench", o, err)
		}
	}
}

func TestConnectionEndpoint(t *testing.T) {
	c := bench.Connection{Socket: "/x/s.sock", Host: "h", Port: 1, User: "u", DB: "d"}
	if n, a := c.Endpoint(); n != "unix" || a != "/x/s.sock" {
		t.Errorf("socket: %s %s", n, a)
	}
	c.Socket = ""
	if n, a := c.Endpoint(); n != "tcp" || a != "h:1" {
		t.Errorf("host: %s %s", n, a)
	}
	if dsn := c.DSN(); !strings.HasPrefix(dsn, "u@tcp(h:1)/d") {
		t.Errorf("DSN %s", dsn)
	}
	// localhost is a socket, never TCP (libmysqlclient's rule), whether or not
	// a server's default socket exists here.
	c.Host = "localhost"
	if n, a := c.Endpoint(); n != "unix" || !strings.HasSuffix(a, ".sock") {
		t.Errorf("localhost: %s %s, want a default socket", n, a)
	}
	inv, err := sysbench.ParseArgs([]string{"--mysql-port=70000"})
	if !errors.Is(err, bench.ErrInvalidOption) || inv != nil {
		t.Errorf("--mysql-port=70000: %v", err)
	}
}

// TestSysbenchSameWork runs real sysbench and the built-in workload on the same
// tables and compares what the server did per transaction (SHOW GLOBAL STATUS
// between the hooks): the same statements, executed the same way. It also checks
// that Run's hooks bracket its window: the COMMITs the server counted
// between them match the transactions sysbench reported.
func TestSysbenchSameWork(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.Sysbench)
	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Fatal("sysbench is needed (apt-get install sysbench; scripts/setup.sh installs it)")
	}
	db := testserver.Admin(t)
	o := bench.DefaultOptions()
	o.Threads, o.TableSize, o.RandType = 2, 2000, "uniform"
	o.Warmup, o.Time = time.Second, 2*time.Second
	dsn := testserver.DSN(t)
	if err := bench.Prepare(context.Background(), dsn, o); err != nil {
		t.Fatal(err)
	}
	conn := bench.Connection{Socket: testserver.Server(t).Socket(), User: "root", DB: testserver.DB(t)}
	names := []string{"Com_stmt_execute", "Com_stmt_prepare", "Com_select", "Com_begin", "Com_commit", "Handler_read_key", "Handler_read_next", "Sort_rows", "Bytes_received"}
	measure := func(run func(h bench.Hooks) (*bench.Result, error)) (*bench.Result, map[string]float64) {
		var before, after map[string]int64
		h := bench.Hooks{
			MeasureStart: func() { before = testserver.GlobalStatus(t, db, names...) },
			MeasureEnd:   func() { after = testserver.GlobalStatus(t, db, names...) },
		}
		r, err := run(h)
		if err != nil {
			t.Fatal(err)
		}
		if before == nil || after == nil {
			t.Fatalf("hooks not called: %v %v", before, after)
		}
		per := map[string]float64{}
		for _, n := range names {
			per[n] = float64(after[n]-before[n]) / float64(r.Events)
		}
		return r, per
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sr, sper := measure(func(h bench.Hooks) (*bench.Result, error) {
		return sysbench.Run(ctx, conn, o, "run", sysbench.Binary{Hooks: h})
	})
	br, bper := measure(func(h bench.Hooks) (*bench.Result, error) { return bench.Run(ctx, dsn, o, h) })
	t.Logf("sysbench %.0f tps, built-in %.0f tps; per transaction sysbench %v, built-in %v", sr.TPS, br.TPS, sper, bper)
	if math.Abs(sper["Com_commit"]-1) > 0.03 {
		t.Errorf("sysbench: %.3f COMMITs per reported transaction between the hooks, want 1 (window not bracketed)", sper["Com_commit"])
	}
	// sysbench's reporter races with the end of the run for the last line.
	if n := len(sr.Intervals); n < 1 || n > 2 || sr.Intervals[0].At != time.Second {
		t.Errorf("sysbench: intervals %+v in a 2 s window", sr.Intervals)
	}
	for _, n := range []string{"Com_stmt_execute", "Com_select", "Com_begin", "Com_commit", "Handler_read_key", "Sort_rows"} {
		if math.Abs(sper[n]-bper[n]) > 0.03*math.Max(1, bper[n]) {
			t.Errorf("%s per transaction: sysbench %.2f, built-in %.2f", n, sper[n], bper[n])
		}
	}
	// sysbench's own CPU over the window: above nothing (it ran 2 threads
	// flat out), below all of the machine's CPUs over the window.
	if sr.ClientCPU < 20*time.Millisecond || sr.ClientCPU > sr.Window*time.Duration(runtime.NumCPU())+20*time.Millisecond {
		t.Errorf("sysbench's CPU over the %v window: %v", sr.Window, sr.ClientCPU)
	}
	if br.ClientCPU != 0 {
		t.Errorf("the built-in client's ClientCPU %v: want 0 (its CPU is the caller's own)", br.ClientCPU)
	}
	if sper["Com_stmt_prepare"] != 0 || bper["Com_stmt_prepare"] != 0 {
		t.Errorf("statements prepared inside the window: sysbench %.3f, built-in %.3f per transaction", sper["Com_stmt_prepare"], bper["Com_stmt_prepare"])
	}
}

// TestSysbenchDriverDetails: with real sysbench, a password goes through a
// private option file and prepare creates the database (as the built-in
// prepare does); Interval is called every ReportInterval with averaged lines;
// a cancelled run leaves no server thread of sysbench's behind, even one in a
// lock wait.
func TestSysbenchDriverDetails(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.Sysbench)
	if _, err := exec.LookPath("sysbench"); err != nil {
		t.Fatal("sysbench is needed (apt-get install sysbench; scripts/setup.sh installs it)")
	}
	db := testserver.Admin(t)
	schema := testserver.DB(t)
	for _, q := range []string{"DROP USER IF EXISTS 'sbpw'@'localhost'", "CREATE USER 'sbpw'@'localhost' IDENTIFIED BY 's3cr:t@x'",
		"GRANT ALL ON *.* TO 'sbpw'@'localhost'", "DROP DATABASE IF EXISTS " + schema} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	conn := bench.Connection{Socket: testserver.Server(t).Socket(), User: "sbpw", Password: "s3cr:t@x", DB: schema}
	o := bench.DefaultOptions()
	o.Workload, o.TableSize, o.Threads = "oltp_update_index", 1000, 2
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := sysbench.Run(ctx, conn, o, "prepare", sysbench.Binary{}); err != nil {
		t.Fatal(err)
	}
	if n := testserver.QueryInt(t, db, "SELECT COUNT(*) FROM `"+schema+"`.sbtest1"); n != 1000 {
		t.Fatalf("sysbench prepare loaded %d rows", n)
	}

	var ats []time.Duration
	o.Time, o.ReportInterval = 4*time.Second, 2*time.Second
	r, err := sysbench.Run(ctx, conn, o, "run", sysbench.Binary{Hooks: bench.Hooks{Interval: func(iv bench.Interval) { ats = append(ats, iv.At) }}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ats) == 0 || ats[0] != 2*time.Second || len(ats) > 2 || len(r.Intervals) < 3 {
		t.Errorf("Interval called at %v (want every 2s), %d per-second intervals", ats, len(r.Intervals))
	}

	// A row every update needs is locked; cancel while sysbench's threads wait.
	lock, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	lock.ExecContext(ctx, "BEGIN")
	if _, err := lock.ExecContext(ctx, "SELECT * FROM `"+schema+"`.sbtest1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	o.Time, o.ReportInterval = time.Minute, 0
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
	defer rcancel()
	began := time.Now()
	if _, err := sysbench.Run(rctx, conn, o, "run", sysbench.Binary{}); err == nil || time.Since(began) > 10*time.Second {
		t.Fatalf("cancelled run: %v after %v", err, time.Since(began))
	}
	// Still holding the lock: the threads are gone because they were killed,
	// not because their statements finished.
	left := int64(-1)
	for try := 0; try < 20 && left != 0; try++ {
		if try > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		left = testserver.QueryInt(t, db, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'sbpw'")
	}
	if left != 0 {
		t.Errorf("%d server threads of the cancelled sysbench left while the lock is held", left)
	}
	lock.ExecContext(ctx, "ROLLBACK")
}
