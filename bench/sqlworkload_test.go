package bench_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/internal/testenv"
	"github.com/perfbisect/perfbisect/internal/testserver"
)

// testConn is where test t's workload connects: its own database on the
// test server.
func testConn(t *testing.T) bench.Connection {
	t.Helper()
	testenv.Require(t, testenv.Server)
	return bench.Connection{Socket: testserver.Server(t).Socket(), User: "root", DB: dbName(t)}
}

// prepareAndRun prepares w in conn's database and measures one window.
func prepareAndRun(ctx context.Context, t *testing.T, w bench.Workload, conn bench.Connection) *bench.Result {
	t.Helper()
	if err := w.Prepare(ctx, conn); err != nil {
		t.Fatal(err)
	}
	res, err := w.Run(ctx, conn, bench.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// example is the path of a shipped SQL workload file.
func example(name string) string {
	_, me, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(me), "..", "docs", "workloads", name)
}

// TestSQLWorkloadJoin: docs/workloads/join.sql on a real server: its
// tables hold the rows its columns say, the same rows from the same seed
// in another database, and a run counts one read per event (an
// autocommit SELECT). A variable given as an option changes the identity
// and the data key.
func TestSQLWorkloadJoin(t *testing.T) {
	conn := testConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := bench.DefaultOptions()
	o.TableSize, o.Threads, o.Time, o.Warmup = 500, 2, time.Second, 0
	w, err := bench.NewSQLWorkload(example("join.sql"), o, []string{"--span=20"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Prepare(ctx, conn); err != nil {
		t.Fatal(err)
	}
	db := admin(t)
	checksum := func(schema string) (customers, orders int, sum string) {
		t.Helper()
		if err := db.QueryRow("SELECT COUNT(*) FROM " + schema + ".customer").Scan(&customers); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow("SELECT COUNT(*), CONCAT(SUM(amount), '/', SUM(customer_code), '/', (SELECT GROUP_CONCAT(name ORDER BY id) FROM "+schema+".customer WHERE id < 4)) FROM "+schema+".orders").Scan(&orders, &sum); err != nil {
			t.Fatal(err)
		}
		return
	}
	c1, o1, s1 := checksum(conn.DB)
	if c1 != 500 || o1 != 1000 {
		t.Errorf("customer %d rows, orders %d rows; want 500 and 1000", c1, o1)
	}
	other := conn
	other.DB = conn.DB + "_again"
	if err := w.Prepare(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, _, s2 := checksum(other.DB); s2 != s1 {
		t.Errorf("the same seed loaded other rows: %s, then %s", s1, s2)
	}
	res, err := w.Run(ctx, conn, bench.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Events < 10 || res.Reads != res.Events || res.Writes != 0 || res.Other != 0 || res.Driver != bench.DriverBuiltin {
		t.Errorf("run: %d events, %d reads, %d writes, %d other, driver %q", res.Events, res.Reads, res.Writes, res.Other, res.Driver)
	}
	w2, err := bench.NewSQLWorkload(example("join.sql"), o, []string{"--span=30"})
	if err != nil {
		t.Fatal(err)
	}
	if w.Identity()["workload variables"] == w2.Identity()["workload variables"] || w.DataKey() == w2.DataKey() {
		t.Errorf("span 20 and 30 share an identity or a data key: %q", w.Identity()["workload variables"])
	}
	if !strings.Contains(w.Identity()["workload variables"], "span=20") {
		t.Errorf("identity's variables: %q", w.Identity()["workload variables"])
	}
	if _, err := bench.NewSQLWorkload(example("join.sql"), o, []string{"--spam=30"}); err == nil || !strings.Contains(err.Error(), "neither a variable the file sets (its variables: customers, orders, span)") {
		t.Errorf("an option that is neither a variable nor sysbench's: %v", err)
	}
}

// TestSQLWorkloadDraws: a generator drawn per transaction has one value in
// all its statements; ?x and ?x+1 in one statement share a draw; a
// statement that fails names FILE:LINE.
func TestSQLWorkloadDraws(t *testing.T) {
	conn := testConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	src := `# draws
table pairs rows 0
  CREATE TABLE pairs (n INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY, a BIGINT NOT NULL, b BIGINT NOT NULL, tag CHAR(8) NOT NULL);
generator x = uniform 1 1000000000 per transaction
generator y = uniform 1 1000000000
generator tag = pick 'red' "blue"
transaction twice weight 3
  INSERT INTO pairs (a, b, tag) VALUES (?x, ?x, ?tag);
  INSERT INTO pairs (a, b, tag) VALUES (?x, ?x, ?tag);
transaction next weight 1 autocommit
  INSERT INTO pairs (a, b, tag) VALUES (?y, ?y+1, 'next');
`
	path := filepath.Join(dir, "draws.sql")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	o := bench.DefaultOptions()
	o.Threads, o.Time = 2, time.Second
	w, err := bench.NewSQLWorkload(path, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := prepareAndRun(ctx, t, w, conn)
	db := admin(t)
	var odd, notNext, tags, nexts, twices int
	q := func(dst *int, query string) {
		t.Helper()
		if err := db.QueryRow(query).Scan(dst); err != nil {
			t.Fatal(err)
		}
	}
	q(&odd, "SELECT COUNT(*) FROM (SELECT a FROM "+conn.DB+".pairs WHERE tag <> 'next' GROUP BY a HAVING COUNT(*) % 2 <> 0) x")
	q(&notNext, "SELECT COUNT(*) FROM "+conn.DB+".pairs WHERE tag = 'next' AND b <> a + 1")
	q(&tags, "SELECT COUNT(DISTINCT tag) FROM "+conn.DB+".pairs")
	q(&nexts, "SELECT COUNT(*) FROM "+conn.DB+".pairs WHERE tag = 'next'")
	q(&twices, "SELECT COUNT(*) FROM "+conn.DB+".pairs WHERE tag <> 'next'")
	if odd != 0 || notNext != 0 || tags != 3 || nexts == 0 || twices < nexts {
		t.Errorf("per-transaction values not shared in %d groups; %d next rows with b <> a+1; %d tags (want red, blue, next); %d next and %d twice rows (weights 1 and 3)",
			odd, notNext, tags, nexts, twices)
	}
	if res.Writes == 0 || res.Other == 0 {
		t.Errorf("run: %d writes, %d other (BEGIN and COMMIT)", res.Writes, res.Other)
	}

	// A statement the server refuses: its file and line in the error.
	bad := filepath.Join(dir, "bad.sql")
	if err := os.WriteFile(bad, []byte("table t rows 3\n  CREATE TABLE t (id INT PRIMARY KEY);\n  column id = seq\ngenerator id = uniform 1 3\ntransaction a weight 1\n  SELECT nosuchcolumn FROM t WHERE id = ?id;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err = bench.NewSQLWorkload(bad, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	bconn := conn
	bconn.DB += "_bad"
	if err := w.Prepare(ctx, bconn); err != nil {
		t.Fatal(err)
	}
	_, err = w.Run(ctx, bconn, bench.Hooks{})
	var se *bench.StatementError
	if !errors.As(err, &se) || se.Statement != "bad.sql:6" || !strings.Contains(err.Error(), "nosuchcolumn") {
		t.Errorf("a failing statement: %v", err)
	}
}

// TestSQLWorkloadMetrics: a file whose transactions are all autocommit
// (join.sql, simple-handler.sql) is judged by qps first; one with a
// BEGIN ... COMMIT transaction (linkbench.sql's add_link) by tps first.
func TestSQLWorkloadMetrics(t *testing.T) {
	o := bench.DefaultOptions()
	for file, want := range map[string]string{"join.sql": "qps", "simple-handler.sql": "qps", "linkbench.sql": "tps"} {
		w, err := bench.NewSQLWorkload(example(file), o, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := w.Metrics(); got[0] != want || len(got) != len(bench.StandardMetrics) {
			t.Errorf("%s: metrics %v, want %s first", file, got, want)
		}
	}
}
