package bench_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/internal/testserver"
)

// TestTPCCConsistency: the built-in TPC-C's load and transactions keep
// TPC-C's consistency conditions (clause 3.3.2.1-4) on a real server, after
// a run of the mix: the warehouse's year-to-date is its districts' sum, each
// district's next order id follows its last order and new order, the
// undelivered orders are exactly those in new_orders, and every order has
// the lines it says. The run's mix and tpmC are TPC-C's.
func TestTPCCConsistency(t *testing.T) {
	conn := testConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o := bench.DefaultOptions()
	o.Threads, o.Time = 2, 3*time.Second
	w, err := bench.NewTPCC(o, []string{"--warehouses=1"})
	if err != nil {
		t.Fatal(err)
	}
	res := prepareAndRun(ctx, t, w, conn)
	no, ok := res.Kind("new_order")
	if !ok || len(res.ByKind) != 5 || no.Events == 0 || res.TPMC != float64(no.Events)/res.Window.Minutes() {
		t.Fatalf("by transaction %+v, tpmC %.0f", res.ByKind, res.TPMC)
	}
	if share := float64(no.Events) / float64(res.Events); share < 0.38 || share > 0.52 {
		t.Errorf("New-Order is %.0f%% of %d transactions, want about 45%%", 100*share, res.Events)
	}
	db, err := sql.Open("mysql", testserver.Server(t).DSN(conn.DB))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct{ what, query string }{
		{"w_ytd = sum(d_ytd)", "SELECT COUNT(*) FROM warehouse w WHERE w_ytd <> (SELECT SUM(d_ytd) FROM district WHERE d_w_id = w.w_id)"},
		{"d_next_o_id - 1 = max(o_id) = max(no_o_id)", `SELECT COUNT(*) FROM district d WHERE d_next_o_id - 1 <> (SELECT MAX(o_id) FROM orders WHERE o_w_id = d_w_id AND o_d_id = d_id)
			OR d_next_o_id - 1 <> (SELECT MAX(no_o_id) FROM new_orders WHERE no_w_id = d_w_id AND no_d_id = d_id)`},
		{"undelivered orders are new_orders", `SELECT COUNT(*) FROM orders LEFT JOIN new_orders ON no_w_id = o_w_id AND no_d_id = o_d_id AND no_o_id = o_id
			WHERE (o_carrier_id IS NULL) <> (no_o_id IS NOT NULL)`},
		{"sum(o_ol_cnt) = count(order_line)", "SELECT (SELECT SUM(o_ol_cnt) FROM orders) - (SELECT COUNT(*) FROM order_line)"},
	} {
		var bad int64
		if err := db.QueryRowContext(ctx, c.query).Scan(&bad); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if bad != 0 {
			t.Errorf("%s: %d rows break it", c.what, bad)
		}
	}
}
