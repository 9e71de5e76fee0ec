package explain

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/stats"
)

// StatementChange is one statement of the workload on both sides: its
// latency as the client saw it (microseconds, medians over the runs) with
// the relative change and its interval (the range of the pairwise
// differences, relative to the base's median), how often a transaction
// runs it, the time it takes of a transaction (µs per transaction) and
// the server's plan of a sample on each side.
type StatementChange struct {
	Name        string          `json:"name"`
	SQL         string          `json:"sql"`
	BaseLatency float64         `json:"base_latency_us"`
	HeadLatency float64         `json:"head_latency_us"`
	Change      float64         `json:"latency_change"`
	Lo          float64         `json:"latency_change_lo"`
	Hi          float64         `json:"latency_change_hi"`
	BasePerTxn  float64         `json:"base_per_txn"` // executions per transaction
	HeadPerTxn  float64         `json:"head_per_txn"`
	BaseTime    float64         `json:"base_us_per_txn"`
	HeadTime    float64         `json:"head_us_per_txn"`
	Share       float64         `json:"share"` // of the change of all statements' time per transaction
	BasePlan    []bench.PlanRow `json:"base_plan,omitempty"`
	HeadPlan    []bench.PlanRow `json:"head_plan,omitempty"`
	// PlanChanged says that the plans differ in more than the optimizer's
	// row estimates (bench.PlanRow.Shape), with one plan on every run of
	// each side (each run EXPLAINs a sample of its own: a plan that varies
	// with the sample's values is no change of the server's).
	PlanChanged bool `json:"plan_changed,omitempty"`
}

// hasStatements says whether every run has the workload's statement times.
func hasStatements(rs []Run) bool {
	for _, r := range rs {
		if len(r.Statements) == 0 {
			return false
		}
	}
	return len(rs) > 0
}

// statements are the statements both sides ran whose latency changed
// beyond the runs' spread (the interval of the pairwise differences
// excludes zero) or whose plan changed (StatementChange.PlanChanged), the
// largest change of time per transaction first, at most top.
func statements(base, head []Run, top int) []StatementChange {
	type series struct {
		lat, per, time []float64
		plan           []bench.PlanRow
		shapes         []string // of each run's plan ("" without one)
		name           string
	}
	side := func(rs []Run) map[string]*series {
		out := map[string]*series{}
		for i, r := range rs {
			events := float64(max(r.Events, 1))
			for _, st := range r.Statements {
				s := out[st.SQL]
				if s == nil {
					s = &series{lat: make([]float64, len(rs)), per: make([]float64, len(rs)), time: make([]float64, len(rs)), shapes: make([]string, len(rs)), name: st.Name}
					out[st.SQL] = s
				}
				us := float64(st.Time.Nanoseconds()) / 1e3
				s.lat[i], s.per[i], s.time[i] = us/float64(max(st.Count, 1)), float64(st.Count)/events, us/events
				if s.plan == nil && len(st.Plan) > 0 {
					s.plan = st.Plan
				}
				s.shapes[i] = planShape(st.Plan)
			}
		}
		return out
	}
	b, h := side(base), side(head)
	total := 0.0
	for _, s := range h {
		total += stats.Median(s.time)
	}
	for _, s := range b {
		total -= stats.Median(s.time)
	}
	var out []StatementChange
	for sql, bs := range b {
		hs := h[sql]
		if hs == nil || slices.Contains(bs.lat, 0) || slices.Contains(hs.lat, 0) {
			continue // not run on both sides in every run
		}
		sc := StatementChange{Name: bs.name, SQL: sql, BaseLatency: stats.Median(bs.lat), HeadLatency: stats.Median(hs.lat),
			BasePerTxn: stats.Median(bs.per), HeadPerTxn: stats.Median(hs.per), BaseTime: stats.Median(bs.time), HeadTime: stats.Median(hs.time),
			BasePlan: bs.plan, HeadPlan: hs.plan, PlanChanged: planChanged(bs.shapes, hs.shapes)}
		lo, hi := PairRange(bs.lat, hs.lat)
		if (lo <= 0 && hi >= 0) && !sc.PlanChanged {
			continue
		}
		sc.Change, sc.Lo, sc.Hi = sc.HeadLatency/sc.BaseLatency-1, math.Max(lo/sc.BaseLatency, -1), hi/sc.BaseLatency
		if total != 0 {
			sc.Share = (sc.HeadTime - sc.BaseTime) / total
		}
		out = append(out, sc)
	}
	slices.SortFunc(out, func(x, y StatementChange) int {
		if c := cmp.Compare(math.Abs(y.HeadTime-y.BaseTime), math.Abs(x.HeadTime-x.BaseTime)); c != 0 {
			return c
		}
		return cmp.Compare(x.SQL, y.SQL)
	})
	return out[:min(len(out), top)]
}

// planShape is a plan without its row estimates, one string ("" for no
// plan).
func planShape(p []bench.PlanRow) string {
	var b strings.Builder
	for _, r := range p {
		b.WriteString(r.Shape())
		b.WriteString("\n")
	}
	return b.String()
}

// planChanged says whether each side ran one plan in every run and the
// two differ; a run without a plan is no change.
func planChanged(base, head []string) bool {
	one := func(shapes []string) bool {
		return len(shapes) > 0 && shapes[0] != "" && !slices.ContainsFunc(shapes, func(s string) bool { return s != shapes[0] })
	}
	return one(base) && one(head) && base[0] != head[0]
}
