// Package testserver gives a package's tests one real, private mariadbd:
// Debian's mariadb-server under /usr on a fresh datadir in a temporary
// directory, started by Main (a TestMain's body) through serverctl and
// stopped when the tests end. Each test gets a database of its own (DB), so
// tests do not see each other's tables. Under -short no server is started
// and the helpers skip the test (testenv.Server).
package testserver

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

	_ "github.com/go-sql-driver/mysql" // database/sql's "mysql"
	"github.com/perfbisect/perfbisect/internal/testenv"
	"github.com/perfbisect/perfbisect/serverctl"
)

// SmallCnf keeps a throw-away server small and quick.
const SmallCnf = `[mysqld]
innodb_buffer_pool_size = 64M
innodb_log_file_size = 16M
innodb_flush_log_at_trx_commit = 2
skip_log_bin
`

var srv *serverctl.Server

// Main starts the server with option file content cnf, runs the tests and
// stops the server; it returns the exit code for os.Exit. It says on stderr
// what is missing (mariadb-server) or what failed, naming pkg.
func Main(m *testing.M, pkg, cnf string) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", pkg+"-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, pkg, "tests:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	in, err := serverctl.FindInstall(ctx, "/usr")
	if err != nil {
		fmt.Fprintln(os.Stderr, pkg, "tests need Debian's mariadb-server (apt-get install mariadb-server):", err)
		return 1
	}
	path := filepath.Join(dir, "test.cnf")
	if err := os.WriteFile(path, []byte(cnf), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, pkg, "tests:", err)
		return 1
	}
	o := serverctl.Options{Install: in, OptionFile: path, RunDir: filepath.Join(dir, "run")}
	if err := serverctl.Initialize(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, pkg, "tests: initialise datadir:", err)
		return 1
	}
	if srv, err = serverctl.Start(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, pkg, "tests: start server:", err)
		return 1
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
		defer scancel()
		if err := srv.Stop(sctx); err != nil {
			fmt.Fprintln(os.Stderr, pkg, "tests: stop server:", err)
		}
	}()
	return m.Run()
}

// Server returns the running server, skipping t without one.
func Server(t testing.TB) *serverctl.Server {
	t.Helper()
	testenv.Require(t, testenv.Server)
	return srv
}

// DB is test t's own database name: t_ and its name, other characters as _.
func DB(t testing.TB) string {
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

// DSN is the go-sql-driver DSN of t's own database as root (created by a
// workload's Prepare when missing).
func DSN(t testing.TB) string {
	t.Helper()
	return Server(t).DSN(DB(t))
}

// Admin returns a pool of root connections without a default database,
// closed when t ends.
func Admin(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", Server(t).DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// GlobalStatus reads counters of SHOW GLOBAL STATUS.
func GlobalStatus(t testing.TB, db *sql.DB, names ...string) map[string]int64 {
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

// QueryInt runs q, which returns one integer (NULL reads as 0), failing t
// on an error.
func QueryInt(t testing.TB, db *sql.DB, q string, args ...any) int64 {
	t.Helper()
	var n sql.NullInt64
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n.Int64
}
