package explain

import (
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
)

// TestStatements: of three statements, the one whose latency doubled in
// every run is first, with its time per transaction and share; one whose
// latency did not change but whose plan did is listed as such; one that
// changed in neither way is not listed. Row estimates alone are no change
// of plan. Times from performance_schema's digests are said to be. Runs
// without statement times give no table.
func TestStatements(t *testing.T) {
	ref := []bench.PlanRow{{ID: "1", SelectType: "SIMPLE", Table: "t1", Type: "ref", Key: "k", Rows: "10", Extra: "Using join buffer (flat, BNLH join)"}}
	bnl := []bench.PlanRow{{ID: "1", SelectType: "SIMPLE", Table: "t1", Type: "ALL", Key: "", Rows: "10", Extra: "Using join buffer (flat, BNL join)"}}
	estimate := []bench.PlanRow{{ID: "1", SelectType: "SIMPLE", Table: "t1", Type: "const", Key: "PRIMARY", Rows: "1"}}
	run := func(slowMs, joinMs float64, joinPlan []bench.PlanRow, rows string) Run {
		e := withRows(estimate, rows)
		return Run{Events: 100, Statements: []bench.StatementTime{
			{Name: "slow", SQL: "SELECT a FROM t WHERE id=?", Count: 1000, Time: time.Duration(slowMs * float64(time.Millisecond)), Plan: e},
			{Name: "join", SQL: "SELECT * FROM t1 JOIN t2 USING (k)", Count: 100, Time: time.Duration(joinMs * float64(time.Millisecond)), Plan: joinPlan},
			{Name: "same", SQL: "SELECT 1", Count: 100, Time: 10 * time.Millisecond},
		}}
	}
	base := []Run{run(100, 50, ref, "1"), run(104, 52, ref, "1"), run(98, 49, ref, "1")}
	head := []Run{run(200, 51, bnl, "2"), run(210, 50, bnl, "2"), run(190, 50.5, bnl, "2")}
	got := statements(base, head, 15)
	if len(got) != 2 {
		t.Fatalf("%d statements listed, want the slower one and the new plan: %+v", len(got), got)
	}
	s := got[0]
	if s.Name != "slow" || s.BaseLatency != 100 || s.HeadLatency != 200 || s.Change != 1 || s.Lo <= 0 || s.BasePerTxn != 10 ||
		s.BaseTime != 1000 || s.HeadTime != 2000 || s.PlanChanged || s.Share < 0.95 || s.Share > 1.05 {
		t.Errorf("first: %+v; want the point select at 100 -> 200 µs, 10 a transaction, 1000 -> 2000 µs of it, its plan the same but for the estimate", s)
	}
	if j := got[1]; j.Name != "join" || !j.PlanChanged || j.HeadPlan[0].Type != "ALL" {
		t.Errorf("second: %+v; want the join, its plan changed", j)
	}
	e := Explain("a", "b", base, head, Options{})
	if len(e.Statements) != 2 || !strings.Contains(strings.Join(e.Sources, ";"), "latency per statement") || e.StatementsFromDigests {
		t.Errorf("Explain: %d statements, sources %q, from digests %v", len(e.Statements), e.Sources, e.StatementsFromDigests)
	}
	// The same times from performance_schema's digests (sysbench): said so.
	for _, rs := range [][]Run{base, head} {
		for _, r := range rs {
			for i := range r.Statements {
				r.Statements[i].Digest = "d" + r.Statements[i].Name
			}
		}
	}
	if e := Explain("a", "b", base, head, Options{}); len(e.Statements) != 2 || !e.StatementsFromDigests ||
		!strings.Contains(strings.Join(e.Sources, ";"), "statement digests") {
		t.Errorf("from digests: %d statements, sources %q, from digests %v", len(e.Statements), e.Sources, e.StatementsFromDigests)
	}
	head[1].Statements = nil
	if e := Explain("a", "b", base, head, Options{}); e.Statements != nil {
		t.Errorf("a run without statement times: %d statements listed", len(e.Statements))
	}
}

// withRows is plan p with its row estimate set to rows.
func withRows(p []bench.PlanRow, rows string) []bench.PlanRow {
	out := append([]bench.PlanRow(nil), p...)
	for i := range out {
		out[i].Rows = rows
	}
	return out
}

// A plan that varies between one side's runs (each EXPLAINs a sample of
// its own values) is no change of plan.
func TestStatementPlanVariesWithTheSample(t *testing.T) {
	rangeScan := []bench.PlanRow{{ID: "1", SelectType: "SIMPLE", Table: "t", Type: "range", Key: "PRIMARY", Rows: "10"}}
	fullScan := []bench.PlanRow{{ID: "1", SelectType: "SIMPLE", Table: "t", Type: "ALL", Rows: "1000"}}
	run := func(plan []bench.PlanRow) Run {
		return Run{Events: 100, Statements: []bench.StatementTime{{Name: "r", SQL: "SELECT c FROM t WHERE id BETWEEN ? AND ?", Count: 100, Time: 50 * time.Millisecond, Plan: plan}}}
	}
	base := []Run{run(rangeScan), run(rangeScan), run(rangeScan)}
	if got := statements(base, []Run{run(fullScan), run(rangeScan), run(fullScan)}, 15); len(got) != 0 {
		t.Errorf("a plan that varies between the head's runs: %+v, want nothing listed", got)
	}
	if got := statements(base, []Run{run(fullScan), run(fullScan), run(fullScan)}, 15); len(got) != 1 || !got[0].PlanChanged {
		t.Errorf("the full scan in every head run: %+v, want the plan changed", got)
	}
}
