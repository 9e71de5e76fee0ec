package bench_test

import (
	"database/sql"
	"os"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	"github.com/perfbisect/perfbisect/internal/testserver"
)

// The tests run against a real, private mariadbd (testserver).
func TestMain(m *testing.M) { os.Exit(testserver.Main(m, "bench", testserver.SmallCnf)) }

// testDSN returns the DSN of a database of its own for test t (created by
// Prepare when missing), so tests do not see each other's tables.
func testDSN(t *testing.T) string { return testserver.DSN(t) }

func dbName(t *testing.T) string { return testserver.DB(t) }

// admin returns a connection pool to the test server without a default database.
func admin(t *testing.T) *sql.DB { return testserver.Admin(t) }

// globalStatus reads counters of SHOW GLOBAL STATUS.
func globalStatus(t *testing.T, db *sql.DB, names ...string) map[string]int64 {
	return testserver.GlobalStatus(t, db, names...)
}
