package bench

import (
	"cmp"
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// StatementTime is one statement of the workload over a run's window
// (Hooks.Statements): how often it completed in the window and its
// latency as the client saw it (the round trip included), with a sample
// of its text with literal values and the server's plan for that sample.
type StatementTime struct {
	Name  string        `json:"name"` // the workload's name for it (point_selects; tpcc statement 3; a SQL file's line)
	SQL   string        `json:"sql"`  // as prepared, ? for its arguments
	Count int64         `json:"count"`
	Time  time.Duration `json:"time"` // the sum of its latencies
	// Sample is one execution of the window with its arguments as SQL
	// literals; "" when they cannot be written as literals.
	Sample string `json:"sample,omitempty"`
	// Plan is the server's EXPLAIN of Sample after the window (nil for a
	// statement EXPLAIN does not take: BEGIN, COMMIT); PlanError says why
	// there is none when EXPLAIN failed.
	Plan      []PlanRow `json:"plan,omitempty"`
	PlanError string    `json:"plan_error,omitempty"`
	// Digest is performance_schema's digest of the statement when its
	// times are the server's from events_statements_summary_by_digest
	// (a workload sysbench runs), not the client's; SQL is then the
	// digest's text, and Schema the database it ran in.
	Digest string `json:"digest,omitempty"`
	Schema string `json:"schema,omitempty"`
}

// PlanRow is one row of EXPLAIN's classic output, by column name (the
// columns every MySQL-family server has; rows is an estimate).
type PlanRow struct {
	ID         string `json:"id"`
	SelectType string `json:"select_type"`
	Table      string `json:"table"`
	Type       string `json:"type"`
	Key        string `json:"key"`
	Rows       string `json:"rows"`
	Extra      string `json:"extra"`
}

// Shape is the row without the optimizer's estimate: what differs between
// two plans that are not the same plan.
func (p PlanRow) Shape() string {
	return strings.Join([]string{p.ID, p.SelectType, p.Table, p.Type, p.Key, p.Extra}, " | ")
}

// stmtClock times one thread's statements while the window is open
// (Hooks.Statements): the thread's own, so no lock is taken.
type stmtClock struct {
	open *atomic.Bool // the runner's: the window is open
	by   map[string]*stmtAcc
}

type stmtAcc struct {
	name, sql string
	n         int64
	d         time.Duration
	sample    []driver.Value // the first execution's arguments in the window
}

// clockStart is when a statement began, for timed; the zero time when
// statements are not timed (time.Now is not read).
func (s *session) clockStart() time.Time {
	if s.clock == nil {
		return time.Time{}
	}
	return time.Now()
}

// timed records a statement that took d and completed now, when the
// window is open. Callers call it only with s.clock set (statements
// timed), so that a verdict's run formats no statement text.
func (s *session) timed(d time.Duration, name, sql string, args []driver.Value) {
	c := s.clock
	if !c.open.Load() {
		return
	}
	a := c.by[sql]
	if a == nil {
		a = &stmtAcc{name: name, sql: sql, sample: slices.Clone(args)}
		for i, v := range a.sample {
			if b, ok := v.([]byte); ok {
				a.sample[i] = string(b)
			}
		}
		c.by[sql] = a
	}
	a.n++
	a.d += d
}

// statementTimes merges the threads' clocks into one StatementTime per
// statement, the dearest first.
func statementTimes(clocks []*stmtClock) []StatementTime {
	by := map[string]*StatementTime{}
	for _, c := range clocks {
		for sql, a := range c.by {
			st := by[sql]
			if st == nil {
				st = &StatementTime{Name: a.name, SQL: sql}
				if q, err := interpolate(sql, named(a.sample)); err == nil {
					st.Sample = q
				}
				by[sql] = st
			}
			st.Count += a.n
			st.Time += a.d
		}
	}
	out := make([]StatementTime, 0, len(by))
	for _, st := range by {
		out = append(out, *st)
	}
	slices.SortFunc(out, func(a, b StatementTime) int {
		if c := cmp.Compare(b.Time, a.Time); c != 0 {
			return c
		}
		return strings.Compare(a.SQL, b.SQL)
	})
	return out
}

// explainable says whether EXPLAIN takes the statement q.
func explainable(q string) bool {
	f := strings.Fields(strings.TrimLeft(q, "( \t\n"))
	if len(f) == 0 {
		return false
	}
	switch strings.ToUpper(strings.TrimLeft(f[0], "(")) {
	case "SELECT", "UPDATE", "DELETE", "INSERT", "REPLACE", "WITH":
		return true
	}
	return false
}

// ExplainSamples puts the server's plan of each statement's sample into
// sts (Plan), over one connection of its own from connector. A statement
// EXPLAIN takes but the server refused, or could not be asked (no
// connection), gets a PlanError; one it does not take (BEGIN) gets
// neither.
func ExplainSamples(ctx context.Context, connector driver.Connector, sts []StatementTime) {
	conn, cerr := connector.Connect(ctx)
	if cerr == nil {
		defer conn.Close()
	}
	for i := range sts {
		st := &sts[i]
		if st.Sample == "" || !explainable(st.Sample) {
			continue
		}
		if cerr != nil {
			st.PlanError = fmt.Sprintf("no connection for EXPLAIN: %v", cerr)
			continue
		}
		var err error
		if st.Plan, err = explainOne(ctx, conn.(driver.QueryerContext), st.Sample); err != nil {
			st.PlanError = err.Error()
		}
	}
}

// explainOne runs EXPLAIN of sample and reads its rows.
func explainOne(ctx context.Context, q driver.QueryerContext, sample string) ([]PlanRow, error) {
	rows, err := q.QueryContext(ctx, "EXPLAIN "+sample, nil)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols := rows.Columns()
	var out []PlanRow
	for {
		dest := make([]driver.Value, len(cols))
		if err := rows.Next(dest); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return out, err
		}
		var p PlanRow
		field := map[string]*string{"id": &p.ID, "select_type": &p.SelectType, "table": &p.Table, "type": &p.Type, "key": &p.Key, "rows": &p.Rows, "extra": &p.Extra}
		for i, c := range cols {
			f := field[strings.ToLower(c)]
			if f == nil {
				continue // a column of one flavor's: partitions, filtered, possible_keys...
			}
			switch x := dest[i].(type) {
			case nil:
			case []byte:
				*f = string(x)
			default:
				*f = fmt.Sprint(x)
			}
		}
		out = append(out, p)
	}
}
