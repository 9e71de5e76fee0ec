package bench_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/perfbisect/perfbisect/internal/testenv"
	"github.com/perfbisect/perfbisect/serverctl"
)

// The tests run against a real, private mariadbd: Debian's mariadb-server under
// /usr, on a fresh datadir in a temporary directory, started once for the package
// through serverctl and stopped at the end.
var srv *serverctl.Server

// testCnf keeps the throw-away server small and quick.
const testCnf = `[mysqld]
innodb_buffer_pool_size = 64M
innodb_log_file_size = 16M
innodb_flush_log_at_trx_commit = 2
skip_log_bin
`

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		// No server: the tests that need one say so and skip
		// (testenv.Require in testDSN and admin).
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "bench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench tests:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	in, err := serverctl.FindInstall(ctx, "/usr")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench tests need Debian's mariadb-server (apt-get install mariadb-server):", err)
		return 1
	}
	cnf := filepath.Join(dir, "test.cnf")
	if err := os.WriteFile(cnf, []byte(testCnf), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "bench tests:", err)
		return 1
	}
	o := serverctl.Options{Install: in, OptionFile: cnf, RunDir: filepath.Join(dir, "run")}
	if err := serverctl.Initialize(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench tests: initialise datadir:", err)
		return 1
	}
	srv, err = serverctl.Start(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench tests: start server:", err)
		return 1
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
		defer scancel()
		if err := srv.Stop(sctx); err != nil {
			fmt.Fprintln(os.Stderr, "bench tests: stop server:", err)
		}
	}()
	return m.Run()
}

// testDSN returns the DSN of a database of its own for test t (created by
// Prepare when missing), so tests do not see each other's tables.
func testDSN(t *testing.T) string {
	t.Helper()
	testenv.Require(t, testenv.Server)
	return srv.DSN(dbName(t))
}

func dbName(t *testing.T) string {
	name := []byte("t_")
	for _, r := range t.Name() {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			name = append(name, byte(r))
		default:
			name = append(name, '_')
		}
	}
	return string(name)
}

// admin returns a connection pool to the test server without a default database.
func admin(t *testing.T) *sql.DB {
	t.Helper()
	testenv.Require(t, testenv.Server)
	db, err := sql.Open("mysql", srv.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// globalStatus reads counters of SHOW GLOBAL STATUS.
func globalStatus(t *testing.T, db *sql.DB, names ...string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, n := range names {
		var name, v string
		if err := db.QueryRow("SHOW GLOBAL STATUS LIKE '"+n+"'").Scan(&name, &v); err != nil {
			t.Fatalf("SHOW GLOBAL STATUS LIKE %q: %v", n, err)
		}
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("status %s = %q: %v", n, v, err)
		}
		out[n] = x
	}
	return out
}
