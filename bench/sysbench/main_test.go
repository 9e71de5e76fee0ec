package sysbench_test

import (
	"os"
	"testing"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/internal/testserver"
)

// The tests run real sysbench against a real, private mariadbd (testserver).
func TestMain(m *testing.M) { os.Exit(testserver.Main(m, "sysbench", testserver.SmallCnf)) }

// testConn is where test t's workload connects: its own database on the
// test server, as root.
func testConn(t *testing.T) bench.Connection {
	t.Helper()
	return bench.Connection{Socket: testserver.Server(t).Socket(), User: "root", DB: testserver.DB(t)}
}
