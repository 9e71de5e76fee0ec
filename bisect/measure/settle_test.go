package measure

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/testenv"
	"github.com/perfbisect/perfbisect/serverctl"
)

// A snapshot's optimizer statistics describe its loaded tables, whatever
// InnoDB's background thread did during the load. With automatic
// recalculation off (the background thread never catching up, as in most
// snapshots of a real 10.0 server) and a workload that builds no index after
// its load (a SQL workload file's table), a run's server reads the whole
// table's statistics when the snapshot was settled, and the empty table's
// when it was not (Config.Unsettled, what snapshots were before).
func TestSnapshotStatisticsDescribeTheLoadedTable(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	repo, rev := fixtureGood(t)
	dir := t.TempDir()
	cnf := filepath.Join(dir, "my.cnf")
	if err := os.WriteFile(cnf, []byte("[mysqld]\ninnodb_stats_auto_recalc=OFF\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	of, err := serverctl.LoadOptionFile(cnf)
	if err != nil {
		t.Fatal(err)
	}
	wl := filepath.Join(dir, "rows.sql")
	if err := os.WriteFile(wl, []byte(`table t rows 20000
  CREATE TABLE t (id INT PRIMARY KEY, code INT NOT NULL, name CHAR(200) NOT NULL) ENGINE=InnoDB;
  column id = seq
  column code = seq
  column name = string "row-####"
generator lo = uniform 1 19000
transaction by_range weight 1
  SELECT COUNT(*) FROM t WHERE id BETWEEN ?lo AND ?lo+99;
`), 0o600); err != nil {
		t.Fatal(err)
	}
	o := bench.DefaultOptions()
	o.Threads, o.Time = 1, time.Second
	w, err := bench.NewSQLWorkload(wl, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The probe reads the statistics the measured server started with.
	probe := func(ctx context.Context, _ string, srv *serverctl.Server) (func() (string, error), error) {
		db, err := sql.Open("mysql", srv.DSN(""))
		if err != nil {
			return nil, err
		}
		defer db.Close()
		var rows, pages int64
		err = db.QueryRowContext(ctx, "SELECT n_rows, clustered_index_size FROM mysql.innodb_table_stats WHERE database_name = 'sbtest' AND table_name = 't'").Scan(&rows, &pages)
		stat := fmt.Sprintf("%d %d", rows, pages)
		return func() (string, error) { return stat, err }, nil
	}
	for _, unsettled := range []bool{false, true} {
		var log strings.Builder
		state := t.TempDir()
		m := New(Config{Builder: &build.Builder{Repo: repo, StateDir: state}, StateDir: state, OptionFile: of,
			Workload: w, Log: &log, Probe: probe, Unsettled: unsettled})
		runs, err := m.Measure(context.Background(), rev, 1)
		if err != nil {
			t.Fatalf("unsettled %v: %v\n%s", unsettled, err, log.String())
		}
		var rows, pages int64
		if _, err := fmt.Sscan(runs[0].Facts[ProbeFact], &rows, &pages); err != nil {
			t.Fatalf("unsettled %v: probe said %q: %v", unsettled, runs[0].Facts[ProbeFact], err)
		}
		// 20,000 rows of about 210 bytes fill about 260 pages of 16K.
		full := rows >= 15000 && pages >= 100
		if full == unsettled {
			t.Errorf("unsettled %v: the snapshot's statistics say %d rows in %d pages of the clustered index\n%s", unsettled, rows, pages, log.String())
		}
		if !unsettled && strings.Contains(log.String(), "optimizer statistics") {
			t.Errorf("settling the snapshot was noted as failed:\n%s", log.String())
		}
	}
}
