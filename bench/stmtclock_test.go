package bench_test

import (
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
)

// TestStatementTimes: with Hooks.Statements, a run of oltp_read_only on a
// real server times each of its statements over the window (point selects
// ten to a transaction, each statement's count matching the events), with
// a sample in literals and the server's plan of it: the point select by
// the primary key, BEGIN without a plan. Without it, nothing is timed.
func TestStatementTimes(t *testing.T) {
	o := bench.DefaultOptions()
	o.Threads, o.Time, o.Warmup = 2, time.Second, 200*time.Millisecond
	dsn := prepared(t, o)
	if r := run(t, dsn, o, bench.Hooks{}); r.Statements != nil {
		t.Errorf("statements timed without Hooks.Statements: %d", len(r.Statements))
	}
	r := run(t, dsn, o, bench.Hooks{Statements: true})
	by := map[string]bench.StatementTime{}
	var sum time.Duration
	for _, st := range r.Statements {
		by[st.Name] = st
		sum += st.Time
	}
	t.Logf("%d events; statements: %+v", r.Events, r.Statements)
	want := map[string]int64{"point_selects": 10, "simple_ranges": 1, "sum_ranges": 1, "order_ranges": 1, "distinct_ranges": 1, "BEGIN": 1, "COMMIT": 1}
	if len(by) != len(want) {
		t.Errorf("%d statements timed, want %d", len(by), len(want))
	}
	slack := 2 * int64(o.Threads) // a statement's event may straddle an edge of the window
	for name, per := range want {
		st, ok := by[name]
		if !ok {
			t.Errorf("%s not timed", name)
			continue
		}
		if n := st.Count; n < per*(r.Events-slack) || n > per*(r.Events+slack) {
			t.Errorf("%s: %d executions in the window of %d events, want %d per event", name, n, r.Events, per)
		}
		if st.Time <= 0 || st.Time/time.Duration(st.Count) > 100*time.Millisecond {
			t.Errorf("%s: %v for %d executions", name, st.Time, st.Count)
		}
	}
	// The threads' time is mostly in statements: their latencies add up
	// to most of the two threads' window, and no more than all of it.
	if whole := 2 * r.Window; sum < whole/2 || sum > whole+whole/10 {
		t.Errorf("statements took %v of the threads' %v", sum, whole)
	}
	ps := by["point_selects"]
	if !strings.HasPrefix(ps.Sample, "SELECT c FROM sbtest1 WHERE id=") || strings.Contains(ps.Sample, "?") {
		t.Errorf("point select's sample %q: want its id as a literal", ps.Sample)
	}
	if len(ps.Plan) != 1 || ps.Plan[0].Table != "sbtest1" || ps.Plan[0].Type != "const" || ps.Plan[0].Key != "PRIMARY" || ps.PlanError != "" {
		t.Errorf("point select's plan %+v (%s): want one row, const on PRIMARY of sbtest1", ps.Plan, ps.PlanError)
	}
	if or := by["order_ranges"]; len(or.Plan) != 1 || !strings.Contains(or.Plan[0].Extra, "filesort") {
		t.Errorf("ORDER BY c's plan %+v: want a filesort", or.Plan)
	}
	if b := by["BEGIN"]; b.Plan != nil || b.PlanError != "" {
		t.Errorf("BEGIN has a plan %+v (%s)", b.Plan, b.PlanError)
	}
}
