package bench_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/internal/testserver"
)

// prepared prepares o in test t's own database and returns its DSN.
func prepared(t *testing.T, o bench.Options) string {
	t.Helper()
	dsn := testDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := bench.Prepare(ctx, dsn, o); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return dsn
}

// countCheck is a query that returns one integer, and the integer it must return.
type countCheck struct {
	what string
	q    string
	want int64
}

// expectCounts runs every check and reports the ones that fail, prefixed.
func expectCounts(t *testing.T, db *sql.DB, prefix string, checks []countCheck) {
	t.Helper()
	for _, c := range checks {
		if got := testserver.QueryInt(t, db, c.q); got != c.want {
			t.Errorf("%s%s: got %d, want %d", prefix, c.what, got, c.want)
		}
	}
}

// expectColumns checks a table's columns: "name type nullable extra" each, in order.
func expectColumns(t *testing.T, db *sql.DB, schema, table string, want ...string) {
	t.Helper()
	rows, err := db.Query(`SELECT CONCAT(COLUMN_NAME, ' ', COLUMN_TYPE, ' ', IS_NULLABLE, ' ', EXTRA)
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, schema, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		cols = append(cols, strings.TrimSpace(s))
	}
	if strings.Join(cols, "; ") != strings.Join(want, "; ") {
		t.Errorf("%s columns: got %q, want %q", table, cols, want)
	}
}

// TestPrepareTables checks what Prepare leaves: N tables of TableSize rows with
// sysbench's columns and value shapes, ids 1..N, k in range, index k_i on k, the
// engine asked for.
func TestPrepareTables(t *testing.T) {
	o := bench.DefaultOptions()
	o.Tables = 3
	o.TableSize = 5000
	o.Threads = 2
	prepared(t, o)
	db := admin(t)
	schema := dbName(t)
	for n := 1; n <= o.Tables; n++ {
		tbl := fmt.Sprintf("`%s`.sbtest%d", schema, n)
		checks := []countCheck{
			{"rows", "SELECT COUNT(*) FROM " + tbl, 5000},
			{"min id", "SELECT MIN(id) FROM " + tbl, 1},
			{"max id", "SELECT MAX(id) FROM " + tbl, 5000},
			{"k outside [1, table-size]", "SELECT COUNT(*) FROM " + tbl + " WHERE k < 1 OR k > 5000", 0},
			{"c not ten 11-digit groups", "SELECT COUNT(*) FROM " + tbl + " WHERE c NOT REGEXP '^([0-9]{11}-){9}[0-9]{11}$'", 0},
			{"pad not five 11-digit groups", "SELECT COUNT(*) FROM " + tbl + " WHERE pad NOT REGEXP '^([0-9]{11}-){4}[0-9]{11}$'", 0},
			{"distinct c", "SELECT COUNT(DISTINCT c) FROM " + tbl, 5000},
			// Special distribution: about 75% of k values in the middle 1%.
			{"k in the middle 1% is about 3/4", "SELECT 1000 * SUM(k BETWEEN 2475 AND 2525) / COUNT(*) BETWEEN 730 AND 790 FROM " + tbl, 1},
		}
		expectCounts(t, db, fmt.Sprintf("sbtest%d ", n), checks)
		expectColumns(t, db, schema, fmt.Sprintf("sbtest%d", n),
			"id int(11) NO auto_increment", "k int(11) NO", "c char(120) NO", "pad char(60) NO")
		var engine string
		db.QueryRow("SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
			schema, fmt.Sprintf("sbtest%d", n)).Scan(&engine)
		if !strings.EqualFold(engine, "InnoDB") {
			t.Errorf("sbtest%d engine %q, want InnoDB", n, engine)
		}
		idx := testserver.QueryInt(t, db, `SELECT COUNT(*) FROM information_schema.STATISTICS
			WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = ? AND COLUMN_NAME = 'k' AND SEQ_IN_INDEX = 1`,
			schema, fmt.Sprintf("sbtest%d", n), bench.IndexName(n))
		if idx != 1 {
			t.Errorf("sbtest%d: no index %s on k", n, bench.IndexName(n))
		}
	}

	// Prepare refuses to load over existing tables; Cleanup drops them.
	ctx := context.Background()
	if err := bench.Prepare(ctx, testDSN(t), o); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second Prepare: got %v, want a 'table already exists' error", err)
	}
	if err := bench.Cleanup(ctx, testDSN(t), o); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	var left []string
	rows, err := db.Query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", schema)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		rows.Scan(&s)
		left = append(left, s)
	}
	rows.Close()
	if len(left) != 0 {
		t.Errorf("after Cleanup tables remain: %v", left)
	}
}

// tableChecksum is a content hash of a table's rows, independent of storage.
func tableChecksum(t *testing.T, db *sql.DB, table string) string {
	t.Helper()
	var sum string
	q := "SELECT CONCAT(COUNT(*), ':', SUM(CRC32(CONCAT_WS(',', id, k, c, pad)))) FROM " + table
	if err := db.QueryRow(q).Scan(&sum); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return sum
}

// TestPrepareDeterministic: the same seed gives the same rows whatever the thread
// count (each table has its own stream); another seed gives other rows.
func TestPrepareDeterministic(t *testing.T) {
	db := admin(t)
	sums := map[string][]string{}
	for _, c := range []struct {
		name    string
		seed    int64
		threads int
	}{{"a", 42, 1}, {"b", 42, 3}, {"c", 43, 1}} {
		t.Run(c.name, func(t *testing.T) {
			o := bench.DefaultOptions()
			o.Tables, o.TableSize, o.Threads, o.RandSeed = 3, 2000, c.threads, c.seed
			prepared(t, o)
			for n := 1; n <= 3; n++ {
				sums[c.name] = append(sums[c.name], tableChecksum(t, db, fmt.Sprintf("`%s`.sbtest%d", dbName(t), n)))
			}
		})
	}
	if strings.Join(sums["a"], " ") != strings.Join(sums["b"], " ") {
		t.Errorf("seed 42 with 1 and 3 threads: rows differ: %v vs %v", sums["a"], sums["b"])
	}
	if sums["a"][0] == sums["a"][1] {
		t.Errorf("sbtest1 and sbtest2 have the same rows (%s)", sums["a"][0])
	}
	for i := range sums["a"] {
		if sums["a"][i] == sums["c"][i] {
			t.Errorf("seeds 42 and 43 gave the same rows in sbtest%d", i+1)
		}
	}
}

// TestPrepareStatements reads the server's general log: tables are created
// without the secondary index, loaded with multi-row INSERTs of thousands of
// rows, and indexed after the load.
func TestPrepareStatements(t *testing.T) {
	db := admin(t)
	logOn(t, db)
	o := bench.DefaultOptions()
	o.TableSize = 10000
	prepared(t, o)
	type entry struct{ cmd, arg string }
	var log []entry
	rows, err := db.Query("SELECT command_type, CONVERT(argument USING utf8mb4) FROM mysql.general_log WHERE argument LIKE '%sbtest1%' ORDER BY event_time, thread_id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var e entry
		rows.Scan(&e.cmd, &e.arg)
		log = append(log, e)
	}
	rows.Close()
	create, index, lastInsert, inserts := -1, -1, -1, 0
	for i, e := range log {
		switch {
		case strings.HasPrefix(e.arg, "CREATE TABLE sbtest1"):
			create = i
			if strings.Contains(e.arg, "KEY k") || strings.Contains(e.arg, "INDEX") {
				t.Errorf("CREATE TABLE has the secondary index: %s", e.arg)
			}
		case strings.HasPrefix(e.arg, "INSERT INTO sbtest1"):
			lastInsert = i
			inserts++
			if r := strings.Count(e.arg, "),("); r+1 < 1000 && i != len(log)-2 {
				t.Errorf("INSERT #%d has %d rows, want thousands", inserts, r+1)
			}
		case strings.HasPrefix(e.arg, "CREATE INDEX k_1 ON sbtest1(k)"):
			index = i
		}
	}
	if create < 0 || index < 0 || lastInsert < 0 {
		t.Fatalf("general log misses statements: create %d, insert %d, index %d (%d entries)", create, lastInsert, index, len(log))
	}
	if !(create < lastInsert && lastInsert < index) {
		t.Errorf("order: CREATE TABLE at %d, last INSERT at %d, CREATE INDEX at %d; want the index after the load", create, lastInsert, index)
	}
	if inserts < 2 || inserts > 10 {
		t.Errorf("%d INSERTs for 10000 rows, want a few multi-row INSERTs", inserts)
	}
}

// loggedRun prepares o's tables, then runs o with the general log on (in
// mysql.general_log) and turns it off again.
func loggedRun(t *testing.T, db *sql.DB, o bench.Options) *bench.Result {
	t.Helper()
	dsn := prepared(t, o)
	logOn(t, db)
	r := run(t, dsn, o, bench.Hooks{})
	db.Exec("SET GLOBAL general_log = 0")
	return r
}

// logOn sends the general log to mysql.general_log for the rest of test t.
func logOn(t *testing.T, db *sql.DB) {
	t.Helper()
	for _, q := range []string{"SET GLOBAL log_output = 'TABLE'", "TRUNCATE TABLE mysql.general_log", "SET GLOBAL general_log = 1"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { db.Exec("SET GLOBAL general_log = 0") })
}

// TestPrepareCancel: cancelling a load returns at once and leaves nothing
// running on the server.
func TestPrepareCancel(t *testing.T) {
	o := bench.DefaultOptions()
	o.Tables, o.Threads, o.TableSize = 2, 2, 300000
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	began := time.Now()
	err := bench.Prepare(ctx, testDSN(t), o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("Prepare returned %v after the cancel", took-300*time.Millisecond)
	}
	db := admin(t)
	time.Sleep(100 * time.Millisecond)
	if n := testserver.QueryInt(t, db, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = ? AND COMMAND <> 'Sleep'", dbName(t)); n != 0 {
		t.Errorf("%d statements of the cancelled load still running", n)
	}
}
