package bench_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"

	"github.com/perfbisect/perfbisect/internal/testenv"
	"github.com/perfbisect/perfbisect/internal/testserver"
)

func legacyOptions() bench.Options {
	o := bench.DefaultOptions()
	o.Workload = "oltp_legacy"
	return o
}

// TestLegacyPrepare reads what Prepare does for oltp_legacy: table sbtest with
// 0.4.12's columns, CREATE INDEX k before the first row, INSERTs of 10000 rows
// (INSERT_ROWS), and the constant rows of oltp_cmd_prepare.
func TestLegacyPrepare(t *testing.T) {
	db := admin(t)
	logOn(t, db)
	o := legacyOptions()
	o.TableSize = 25000
	prepared(t, o)
	db.Exec("SET GLOBAL general_log = 0")
	schema := dbName(t)

	var log []string
	rows, err := db.Query("SELECT CONVERT(argument USING utf8mb4) FROM mysql.general_log WHERE command_type = 'Query' AND argument LIKE '%sbtest%' ORDER BY event_time")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		rows.Scan(&s)
		log = append(log, s)
	}
	rows.Close()
	var order []string
	var perInsert []int
	for _, q := range log {
		switch {
		case strings.HasPrefix(q, "CREATE TABLE sbtest "):
			order = append(order, "create")
			if strings.Contains(strings.ToUpper(q), "KEY K") {
				t.Errorf("the index is in CREATE TABLE, sb_oltp.c creates it apart: %s", q)
			}
		case q == "CREATE INDEX k on sbtest(k)":
			order = append(order, "index")
		case strings.HasPrefix(q, "INSERT INTO sbtest(k, c, pad) VALUES (0,' ','qqqqqqqqqqwwwwwwwwwweeeeeeeeeerrrrrrrrrrtttttttttt'),"):
			order = append(order, "insert")
			perInsert = append(perInsert, strings.Count(q, "),(")+1)
		}
	}
	if got := strings.Join(order, " "); got != "create index insert insert insert" {
		t.Errorf("statements %q, want CREATE TABLE, CREATE INDEX, then 3 INSERTs (log: %.300q)", got, log)
	}
	if fmt.Sprint(perInsert) != "[10000 10000 5000]" {
		t.Errorf("rows per INSERT %v, want [10000 10000 5000]", perInsert)
	}

	tbl := fmt.Sprintf("`%s`.sbtest", schema)
	checks := []countCheck{
		{"rows", "SELECT COUNT(*) FROM " + tbl, 25000},
		{"min id", "SELECT MIN(id) FROM " + tbl, 1},
		{"max id", "SELECT MAX(id) FROM " + tbl, 25000},
		{"k not 0", "SELECT COUNT(*) FROM " + tbl + " WHERE k <> 0", 0},
		{"c not ' '", "SELECT COUNT(*) FROM " + tbl + " WHERE c <> ' ' OR LENGTH(c) <> 0", 0},
		{"pad not qqq..ttt", "SELECT COUNT(*) FROM " + tbl + " WHERE pad <> 'qqqqqqqqqqwwwwwwwwwweeeeeeeeeerrrrrrrrrrtttttttttt'", 0},
		{"index k on k", "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = '" + schema +
			"' AND TABLE_NAME = 'sbtest' AND INDEX_NAME = 'k' AND COLUMN_NAME = 'k' AND SEQ_IN_INDEX = 1", 1},
		{"tables", "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '" + schema + "'", 1},
	}
	expectCounts(t, db, "", checks)
	expectColumns(t, db, schema, "sbtest",
		"id int(10) unsigned NO auto_increment", "k int(10) unsigned NO", "c char(120) NO", "pad char(60) NO")

	if err := bench.Cleanup(context.Background(), testDSN(t), o); err != nil {
		t.Fatal(err)
	}
	if n := testserver.QueryInt(t, db, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", schema); n != 0 {
		t.Errorf("%d tables left after Cleanup", n)
	}
}

// TestLegacyTableName: --oltp-table-name and --oltp-auto-inc=off, through
// prepare, run and cleanup.
func TestLegacyTableName(t *testing.T) {
	o := legacyOptions()
	o.OLTPTableName = "legacy_t"
	o.AutoInc = false
	o.TableSize = 500
	o.Time = 300 * time.Millisecond
	dsn := prepared(t, o)
	db := admin(t)
	tbl := fmt.Sprintf("`%s`.legacy_t", dbName(t))
	if n := testserver.QueryInt(t, db, "SELECT COUNT(*) FROM "+tbl+" WHERE id BETWEEN 1 AND 500 AND k = 0"); n != 500 {
		t.Errorf("%d rows with ids 1..500, want 500", n)
	}
	var extra string
	db.QueryRow("SELECT EXTRA FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'legacy_t' AND COLUMN_NAME = 'id'", dbName(t)).Scan(&extra)
	if extra != "" {
		t.Errorf("id has %q with --oltp-auto-inc=off", extra)
	}
	r := run(t, dsn, o, bench.Hooks{})
	if r.Events == 0 || r.Writes != 5*r.Events {
		t.Errorf("%d events, %d writes: want 5 writes per event", r.Events, r.Writes)
	}
	if n := testserver.QueryInt(t, db, "SELECT COUNT(*) FROM "+tbl); n != 500 {
		t.Errorf("%d rows after the run, want 500 (each DELETE has its INSERT)", n)
	}
	if err := bench.Cleanup(context.Background(), dsn, o); err != nil {
		t.Fatal(err)
	}
	if n := testserver.QueryInt(t, db, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", dbName(t)); n != 0 {
		t.Errorf("%d tables left after Cleanup", n)
	}
}

// TestLegacyCounts runs oltp_legacy's three modes with one thread and counts
// what the server executed (Com_*). With one thread every event the server saw
// is complete (the last finishes after the window), so the server's counts are
// exact multiples of its events: 0.4.12's statement mix, checked on the server.
func TestLegacyCounts(t *testing.T) {
	db := admin(t)
	cases := []struct {
		name                     string
		change                   func(o *bench.Options)
		selects, updates, delins int64 // per event; delins: DELETEs = INSERTs
		trx                      bool
		reads, writes, other     int64 // Result per event
	}{
		{"complex", nil, 14, 3, 1, true, 14, 5, 2},
		{"complex read-only", func(o *bench.Options) { o.OLTPReadOnly = true }, 14, 0, 0, true, 14, 0, 2},
		{"simple", func(o *bench.Options) { o.OLTPTestMode = "simple" }, 1, 0, 0, false, 1, 0, 0},
		{"skip-trx 3 points 2 updates", func(o *bench.Options) {
			o.SkipTrx, o.PointSelects, o.IndexUpdates = true, 3, 2
		}, 7, 4, 1, false, 7, 6, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := legacyOptions()
			o.Threads = 1
			o.Time = 700 * time.Millisecond
			if c.change != nil {
				c.change(&o)
			}
			dsn := prepared(t, o)
			names := []string{"Com_stmt_prepare", "Com_stmt_execute", "Com_select", "Com_update", "Com_delete",
				"Com_insert", "Com_begin", "Com_commit", "Com_rollback"}
			before := globalStatus(t, db, names...)
			r := run(t, dsn, o, bench.Hooks{})
			after := globalStatus(t, db, names...)
			d := func(n string) int64 { return after[n] - before[n] }

			if r.Events < 50 || r.IgnoredErrors != 0 || r.Reconnects != 0 {
				t.Fatalf("%d events, %d ignored errors, %d reconnects", r.Events, r.IgnoredErrors, r.Reconnects)
			}
			if r.Reads != c.reads*r.Events || r.Writes != c.writes*r.Events || r.Other != c.other*r.Events {
				t.Errorf("result r/w/o %d/%d/%d for %d events, want %d/%d/%d per event", r.Reads, r.Writes, r.Other, r.Events, c.reads, c.writes, c.other)
			}
			reads, writes, other := bench.StatementsPerEvent(o)
			if int64(reads) != c.reads || int64(writes) != c.writes || int64(other) != c.other {
				t.Errorf("StatementsPerEvent %d/%d/%d, want %d/%d/%d", reads, writes, other, c.reads, c.writes, c.other)
			}
			// The server's events: one SELECT CONNECTION_ID() per session is not one.
			events := (d("Com_select") - 1) / c.selects
			if events < r.Events || events > r.Events+20 {
				t.Fatalf("server ran %d SELECTs, %d events' worth, for %d events counted", d("Com_select"), events, r.Events)
			}
			want := map[string]int64{
				"Com_select": c.selects*events + 1, "Com_update": c.updates * events,
				"Com_delete": c.delins * events, "Com_insert": c.delins * events, "Com_rollback": 0,
				"Com_begin": events * boolInt(c.trx), "Com_commit": events * boolInt(c.trx),
			}
			for n, w := range want {
				if d(n) != w {
					t.Errorf("%s +%d, want %d for %d events", n, d(n), w, events)
				}
			}
			stmts := (c.selects + c.updates + 2*c.delins + 2*boolInt(c.trx)) * events
			if d("Com_stmt_execute") != stmts {
				t.Errorf("Com_stmt_execute +%d, want %d: every statement executed as prepared", d("Com_stmt_execute"), stmts)
			}
			// prepare_stmt_set_trx prepares all nine statements in every mode,
			// and BEGIN and COMMIT unless --oltp-skip-trx.
			prep := int64(9 + 2*boolInt(!o.SkipTrx))
			if d("Com_stmt_prepare") != prep || len(bench.StatementKinds(o)) != 9 {
				t.Errorf("Com_stmt_prepare +%d, want %d; StatementKinds %v", d("Com_stmt_prepare"), prep, bench.StatementKinds(o))
			}
		})
	}
}

// TestLegacyProtocol reads the general log of a complex-mode run: every event
// is get_request_complex's sequence with 0.4.12's statement texts, its ranges
// bounded as sb_oltp.c bounds them, its DELETE and INSERT on the id of the extra
// index update, and its ids drawn from the special distribution.
func TestLegacyProtocol(t *testing.T) {
	db := admin(t)
	o := legacyOptions()
	o.TableSize = 1000
	o.Time = 400 * time.Millisecond
	r := loggedRun(t, db, o)

	prepares := map[string]int{}
	var execs []string
	rows, err := db.Query(`SELECT command_type, CONVERT(argument USING utf8mb4) FROM mysql.general_log
		WHERE command_type IN ('Prepare', 'Execute') ORDER BY event_time`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var cmd, arg string
		rows.Scan(&cmd, &arg)
		if cmd == "Prepare" {
			prepares[arg]++
		} else {
			execs = append(execs, arg)
		}
	}
	rows.Close()
	for _, q := range []string{
		"SELECT c from sbtest where id=?", "SELECT c from sbtest where id between ? and ?",
		"SELECT SUM(K) from sbtest where id between ? and ?", "SELECT c from sbtest where id between ? and ? order by c",
		"SELECT DISTINCT c from sbtest where id between ? and ? order by c", "UPDATE sbtest set k=k+1 where id=?",
		"UPDATE sbtest set c=? where id=?", "DELETE from sbtest where id=?",
		"INSERT INTO sbtest values(?,0,' ','aaaaaaaaaaffffffffffrrrrrrrrrreeeeeeeeeeyyyyyyyyyy')", "BEGIN", "COMMIT",
	} {
		if prepares[q] != 1 {
			t.Errorf("prepared %d times, want once: %s (prepared: %v)", prepares[q], q, prepares)
		}
	}
	if len(prepares) != 11 {
		t.Errorf("%d statements prepared, want 11: %v", len(prepares), prepares)
	}

	// One event: the statement patterns in order; groups capture ids.
	id := `(-?\d+)`
	event := []*regexp.Regexp{regexp.MustCompile(`^BEGIN$`)}
	for range 10 {
		event = append(event, regexp.MustCompile(`^SELECT c from sbtest where id=`+id+`$`))
	}
	event = append(event,
		regexp.MustCompile(`^SELECT c from sbtest where id between `+id+` and `+id+`$`),
		regexp.MustCompile(`^SELECT SUM\(K\) from sbtest where id between `+id+` and `+id+`$`),
		regexp.MustCompile(`^SELECT c from sbtest where id between `+id+` and `+id+` order by c$`),
		regexp.MustCompile(`^SELECT DISTINCT c from sbtest where id between `+id+` and `+id+` order by c$`),
		regexp.MustCompile(`^UPDATE sbtest set k=k\+1 where id=`+id+`$`),
		regexp.MustCompile(`^UPDATE sbtest set c='\d+(?:-\d+){9}' where id=`+id+`$`),
		regexp.MustCompile(`^UPDATE sbtest set k=k\+1 where id=`+id+`$`),
		regexp.MustCompile(`^DELETE from sbtest where id=`+id+`$`),
		regexp.MustCompile(`^INSERT INTO sbtest values\(`+id+`,0,' ','aaaaaaaaaaffffffffffrrrrrrrrrreeeeeeeeeeyyyyyyyyyy'\)$`),
		regexp.MustCompile(`^COMMIT$`),
	)
	var events int64
	hot, points := 0, 0
	for len(execs) >= len(event) {
		var ids [][]int
		for i, re := range event {
			m := re.FindStringSubmatch(execs[i])
			if m == nil {
				t.Fatalf("event %d, statement %d: %q does not match %s", events+1, i+1, execs[i], re)
			}
			var v []int
			for _, s := range m[1:] {
				n, _ := strconv.Atoi(s)
				v = append(v, n)
			}
			ids = append(ids, v)
		}
		for _, v := range ids[1:11] {
			if v[0] < 1 || v[0] > 1000 {
				t.Errorf("event %d: point select of id %d outside the table", events+1, v[0])
			}
			if v[0] >= 495 && v[0] <= 504 { // the special ids of 1000 rows: 10 from 495
				hot++
			}
			points++
		}
		for i, width := range []int{99, 99, 99, 100} { // the distinct range has one row more
			from, to := ids[11+i][0], ids[11+i][1]
			if to-from != width || from < 1 || to > 1000 {
				t.Errorf("event %d: range %d is [%d, %d], want %d+1 ids inside [1, 1000]", events+1, i+1, from, to, width)
			}
		}
		if x := ids[17][0]; ids[18][0] != x || ids[19][0] != x {
			t.Errorf("event %d: extra index update of %d, DELETE of %d, INSERT of %d: want one id", events+1, x, ids[18][0], ids[19][0])
		}
		execs = execs[len(event):]
		events++
	}
	if events < r.Events || len(execs) != 0 {
		t.Errorf("%d complete events in the log (%d statements left over) for %d counted", events, len(execs), r.Events)
	}
	// 75% special + about 1% of the gaussian quarter.
	if f := float64(hot) / float64(points); f < 0.70 || f > 0.82 {
		t.Errorf("%.3f of %d point selects on ids 495..504, want about 0.76 (special distribution)", f, points)
	}
}

// TestLegacyRetried: four threads on a 10-row table, where three quarters of
// the ids are id 5, deadlock and wait for locks; the events are retried and
// rolled back, and the table keeps its rows.
func TestLegacyRetried(t *testing.T) {
	o := legacyOptions()
	o.TableSize = 10
	o.Threads = 4
	o.Time = 1500 * time.Millisecond
	dsn := prepared(t, o)
	r := run(t, dsn, o, bench.Hooks{})
	if r.Events < 20 {
		t.Errorf("only %d events", r.Events)
	}
	t.Logf("%d events, ignored %v", r.Events, r.IgnoredByCode)
	db := admin(t)
	if n := testserver.QueryInt(t, db, fmt.Sprintf("SELECT COUNT(*) FROM `%s`.sbtest", dbName(t))); n != 10 {
		t.Errorf("%d rows after the run, want 10", n)
	}
}

// TestLegacyReconnect: killed connections are re-opened and the legacy
// statements prepared again on the new ones.
func TestLegacyReconnect(t *testing.T) {
	o := legacyOptions()
	o.Threads = 2
	o.Time = 2 * time.Second
	dsn := prepared(t, o)
	db := admin(t)
	before := globalStatus(t, db, "Com_stmt_prepare")
	time.AfterFunc(700*time.Millisecond, func() { killConnectionsOf(db, dbName(t)) })
	r := run(t, dsn, o, bench.Hooks{})
	prepared := globalStatus(t, db, "Com_stmt_prepare")["Com_stmt_prepare"] - before["Com_stmt_prepare"]
	if r.Reconnects != 2 || prepared != 2*2*11 {
		t.Errorf("%d reconnects, %d statements prepared; want 2 and 2 x 2 sessions x 11", r.Reconnects, prepared)
	}
	if last := r.Intervals[len(r.Intervals)-1]; last.TPS <= 0 {
		t.Errorf("no events after the reconnect: %+v", last)
	}
}

// TestLegacyMissingTable: Run without Prepare fails before any event, naming
// the statement and the table.
func TestLegacyMissingTable(t *testing.T) {
	testenv.Require(t, testenv.Server)
	o := legacyOptions()
	o.Time = time.Second
	_, err := bench.Run(context.Background(), testserver.Server(t).DSN("mysql"), o, bench.Hooks{})
	if err == nil || !strings.Contains(err.Error(), "connect and prepare statements") ||
		!strings.Contains(err.Error(), "prepare point (SELECT c from sbtest where id=?)") ||
		!strings.Contains(err.Error(), "sbtest' doesn't exist") {
		t.Errorf("got %v, want a prepare error for point on a missing sbtest", err)
	}
}
