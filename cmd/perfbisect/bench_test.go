package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/perfbisect/perfbisect/serverctl"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

// TestBenchCommand drives `perfbisect bench` like sysbench against a private
// mariadbd: prepare, a built-in run as JSON, a real-sysbench run of the same
// tables in sysbench's text, a 0.4-style command line, bad arguments, cleanup.
func TestBenchCommand(t *testing.T) {
	srv := benchServer(t)
	dir := t.TempDir()
	conn := []string{"--mysql-socket=" + srv.Socket(), "--mysql-user=root", "--mysql-db=bt"}
	bench := func(args ...string) result {
		return perfbisect(t, nil, append([]string{"bench"}, append(conn, args...)...)...)
	}
	db, err := sql.Open("mysql", srv.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tables := func() int {
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'bt' AND table_name LIKE 'sbtest%'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	if r := bench("oltp_read_only", "--tables=2", "--table-size=2000", "--threads=2", "prepare"); r.code != 0 || tables() != 2 {
		t.Fatalf("prepare: exit %d, %d tables", r.code, tables())
	}
	out := filepath.Join(dir, "run.json")
	r := bench("oltp_read_only", "--tables=2", "--table-size=2000", "--threads=2", "--time=2", "--warmup-time=1", "--format", "json", "--output", out, "run")
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("built-in run: exit %d, stdout %q", r.code, r.stdout)
	}
	var doc struct {
		Workload string
		Result   struct {
			Driver       string
			Window       float64 `json:"window_s"`
			Transactions int64
			TPS          float64
			Queries      map[string]int64
			Intervals    []json.RawMessage
		}
	}
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v:\n%s", err, b)
	}
	res := doc.Result
	if !strings.HasPrefix(doc.Workload, "oltp_read_only, 2 thread(s), 2 table(s) x 2000 rows") || res.Driver != "built-in" || res.Transactions < 100 || res.Window < 1.9 || res.Window > 2.5 ||
		res.Queries["read"] != 14*res.Transactions || res.Queries["other"] != 2*res.Transactions || len(res.Intervals) != 2 {
		t.Errorf("built-in run: %+v", doc)
	}

	// --format json alone goes to standard output (how scripts/bench-vs-sysbench reads it).
	if r := bench("oltp_read_only", "--tables=2", "--table-size=2000", "--time=1", "--format", "json", "run"); r.code != 0 || !strings.HasPrefix(r.stdout, "{") {
		t.Errorf("--format json to stdout: exit %d", r.code)
	}

	r = bench("--driver", "sysbench", "oltp_read_only", "--tables=2", "--table-size=2000", "--threads=2", "--time=2", "--report-interval=1", "run")
	if r.code != 0 || !strings.Contains(r.stdout, "sysbench 1.0") || strings.Count(r.stdout, "] thds: 2 tps:") < 1 ||
		!strings.Contains(r.stdout, "transactions:") || !strings.Contains(r.stdout, "95th percentile:") {
		t.Errorf("sysbench run: exit %d\n%s", r.code, r.stdout)
	}

	// A 0.4.12 command line from a bug report runs, with notes saying what its
	// options became.
	legacy := []string{"--test=oltp", "--oltp-read-only=on", "--oltp-table-size=2000", "--num-threads=2", "--max-time=1"}
	if r := bench(append(legacy, "prepare")...); r.code != 0 {
		t.Errorf("legacy prepare: exit %d", r.code)
	}
	r = bench(append(legacy, "run")...)
	if r.code != 0 || !strings.Contains(r.stderr, "--num-threads is --threads") || !strings.Contains(r.stdout, "transactions:") ||
		!strings.Contains(r.stdout, "0.4.12") {
		t.Errorf("legacy command line: exit %d", r.code)
	}
	bench(append(legacy, "cleanup")...)

	// oltp_insert without auto-increment draws its ids from the seed's unique
	// sequence: a second run on the same table must not repeat the first's ids.
	for i := 0; i < 2; i++ {
		args := []string{"oltp_insert", "--mysql-db=bti", "--auto-inc", "off", "--table-size=100", "--threads=2", "--time=1"}
		if i == 0 {
			if r := bench(append(args, "prepare")...); r.code != 0 || !strings.Contains(r.stderr, "of 0 rows") {
				t.Fatalf("oltp_insert prepare: exit %d", r.code)
			}
		}
		if r := bench(append(args, "run")...); r.code != 0 {
			t.Errorf("oltp_insert run %d: exit %d", i+1, r.code)
		}
	}

	bad := filepath.Join(dir, "bad.json")
	for _, args := range [][]string{
		{"oltp_read_only", "--thread=2", "run"},                                        // a typo
		{"oltp_read_only", "--time=2"},                                                 // no command
		{"oltp_read_only", "--driver", "sysbench", "--rand-type=zipfian", "run"},       // not in sysbench 1.0
		{"oltp_read_only", "--format", "xml", "run"},                                   // unknown format
		{"oltp_nothing", "--output", bad, "run"},                                       // unknown workload
		{"oltp_read_only", "--output", filepath.Join(dir, "missing", "x.json"), "run"}, // unwritable output
		{"oltp_read_only", "--output", bad, "prepare"},                                 // output of a prepare
		{"oltp_read_only", "--output=", "run"},                                         // an empty --output
		{"oltp_read_only", "oltp_point_select", "run"},                                 // two workloads
	} {
		if r := bench(args...); r.code != 2 || r.stdout != "" || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, want 2 with one line on stderr", args, r.code)
		}
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("a refused run wrote its --output file")
	}
	// A server that is not there is a failure of the run (1), named.
	r = perfbisect(t, nil, "bench", "--mysql-socket="+filepath.Join(dir, "none.sock"), "--mysql-user=root", "oltp_read_only", "--time=1", "run")
	if r.code != 1 || !strings.Contains(r.stderr, "none.sock") {
		t.Errorf("no server: exit %d", r.code)
	}

	bench("oltp_insert", "--mysql-db=bti", "cleanup")
	if r := bench("oltp_read_only", "--tables=2", "cleanup"); r.code != 0 || tables() != 0 {
		t.Errorf("cleanup: exit %d, %d tables left", r.code, tables())
	}
}

// benchServer starts Debian's mariadbd on a fresh datadir for test t,
// stopped when the test ends.
func benchServer(t *testing.T) *serverctl.Server {
	t.Helper()
	testenv.Require(t, testenv.Server)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	in, err := serverctl.FindInstall(ctx, "/usr")
	if err != nil {
		t.Fatalf("Debian's mariadb-server is needed: %v", err)
	}
	o := serverctl.Options{Install: in, RunDir: filepath.Join(dir, "run")}
	if err := serverctl.Initialize(ctx, o); err != nil {
		t.Fatal(err)
	}
	srv, err := serverctl.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	return srv
}

// TestBenchCustomWorkloads: perfbisect bench runs a sysbench script (its
// own prepare, run and cleanup under sysbench) and a SQL workload file
// (the built-in engine) against a server the user names.
func TestBenchCustomWorkloads(t *testing.T) {
	testenv.Require(t, testenv.Sysbench)
	srv := benchServer(t)
	db, err := sql.Open("mysql", srv.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tables := func(schema string) string {
		t.Helper()
		var names sql.NullString
		if err := db.QueryRow("SELECT GROUP_CONCAT(table_name ORDER BY table_name) FROM information_schema.tables WHERE table_schema = ?", schema).Scan(&names); err != nil {
			t.Fatal(err)
		}
		return names.String
	}
	conn := func(db string) []string {
		return []string{"bench", "--mysql-socket=" + srv.Socket(), "--mysql-user=root", "--mysql-db=" + db}
	}
	script := filepath.Join(repoRoot(t), "cmd", "perfbisect", "testdata", "lua", "join.lua")
	file := filepath.Join(repoRoot(t), "docs", "workloads", "join.sql")
	for _, c := range []struct {
		name, workload, db, tables, driver string
		opts                               []string
	}{
		{"script", script, "lua", "jc_customer,jc_order", "sysbench 1.", []string{"--customers=500", "--span=20"}},
		{"SQL file", file, "sqlf", "customer,orders", "built-in", []string{"--table-size=500", "--span=20"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(append(conn(c.db), c.workload, "--threads=2"), c.opts...)
			if r := perfbisect(t, nil, append(args, "prepare")...); r.code != 0 || tables(c.db) != c.tables {
				t.Fatalf("prepare: exit %d, tables %q, want %q", r.code, tables(c.db), c.tables)
			}
			r := perfbisect(t, nil, append(args, "--time=1", "--format", "json", "run")...)
			var doc struct {
				Workload string
				Result   struct {
					Driver       string
					Transactions int64
					Queries      map[string]int64
				}
			}
			if err := json.Unmarshal([]byte(r.stdout), &doc); r.code != 0 || err != nil {
				t.Fatalf("run: exit %d, %v", r.code, err)
			}
			if !strings.HasPrefix(doc.Result.Driver, c.driver) || doc.Result.Transactions < 5 || doc.Result.Queries["read"] != doc.Result.Transactions ||
				!strings.Contains(doc.Workload, filepath.Base(c.workload)) || !strings.Contains(doc.Workload, "span=20") {
				t.Errorf("run: %+v", doc)
			}
			if r := perfbisect(t, nil, append(args, "cleanup")...); r.code != 0 || tables(c.db) != "" {
				t.Errorf("cleanup: exit %d, tables %q left", r.code, tables(c.db))
			}
		})
	}
}
