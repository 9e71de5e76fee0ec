package bench

import (
	"database/sql/driver"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestSQLFileExamples: every shipped example reads, with its tables,
// transactions and placeholders as written.
func TestSQLFileExamples(t *testing.T) {
	_, me, _, _ := runtime.Caller(0)
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(me), "..", "docs", "workloads", "*.sql"))
	if len(files) < 5 {
		t.Fatalf("examples: %v", files)
	}
	vars := map[string]int64{"table-size": 1000, "tables": 1, "range-size": 100}
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parseSQLFile(filepath.Base(path), src, vars, nil)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if len(f.tables) == 0 || len(f.txns) == 0 {
			t.Errorf("%s: %d tables, %d transactions", path, len(f.tables), len(f.txns))
		}
	}
	src, _ := os.ReadFile(filepath.Join(filepath.Dir(me), "..", "docs", "workloads", "join.sql"))
	f, err := parseSQLFile("join.sql", src, vars, map[string]int64{"span": 10})
	if err != nil {
		t.Fatal(err)
	}
	orders := f.tables[1]
	if orders.name != "orders" || orders.rows != 2000 || strings.Join(orders.cols, ",") != "id,customer_code,amount" || orders.gens[1].kind != "cycle" || orders.gens[1].b != 1000 {
		t.Errorf("orders table: %+v", orders)
	}
	st := f.txns[0].stmts[0]
	if !st.query || strings.Count(st.text, "?") != 2 || len(st.refs) != 2 || st.refs[0] != (sqlRef{"first", 0}) || st.refs[1] != (sqlRef{"first", 9}) {
		t.Errorf("join statement (span 10): %+v", st)
	}
	if g := f.gens["first"]; g.a != 1 || g.b != 991 {
		t.Errorf("generator first over [%d, %d], want [1, 991] (1000 customers, span 10)", g.a, g.b)
	}
}

// TestSQLFileErrors: a mistake is named with FILE:LINE and what to write
// instead.
func TestSQLFileErrors(t *testing.T) {
	const good = "table t rows 10\n  CREATE TABLE t (id INT PRIMARY KEY);\n  column id = seq\n"
	for _, c := range []struct {
		src, want string
	}{
		{good + "transaction a weight 1\n  SELECT * FROM t WHERE id = ?nope;\n", "w.sql:5: ?nope: no generator"},
		{good + "generator id = uniform 1 10\ntransaction a weight 1\n  SELECT * FROM t WHERE id = ?;\n", "w.sql:6: a bare ?"},
		{good + "generator id = uniform 1 10\ntransaction a weight 1\n  SELECT * FROM t WHERE id = ?id\n", "w.sql:6: a statement without its closing ;"},
		{good + "generator id = sometimes 1 10\n", "w.sql:4: generator id: \"sometimes\""},
		{good + "generator id = uniform 10 1\n", "w.sql:4: generator id: uniform 10 1: want 0 <= A <= B"},
		{good + "generator id = uniform 1 {rows}\n", "w.sql:4: {rows}: no such variable"},
		{good + "set x = 3 +\n", "w.sql:4: set x = 3 +"},
		{good + "transaction a weight 1\n", "w.sql:4: transaction a has no statements"},
		{good, "no transaction"},
		{"table t rows 10\n  column id = seq\ntransaction a weight 1\n  SELECT 1;\n", "w.sql:1: table t has no CREATE TABLE"},
		{"table t rows 10\n  CREATE TABLE t (id INT);\ntransaction a weight 1\n  SELECT 1;\n", "w.sql:1: table t has 10 rows but no column lines"},
		{"  SELECT 1;\n", "w.sql:1: an indented line outside a block"},
		{"select 1;\n", "w.sql:1: \"select\": a line at the start is one of"},
		{good + "generator s = string \"ab#\"\ntransaction a weight 1\n  SELECT * FROM t WHERE id = ?s+1;\n", "w.sql:6: ?s+1: an offset needs a number"},
		{good + "generator id = uniform 1 10\nconnection\n  SET @x = ?id;\ntransaction a weight 1\n  SELECT 1;\n", "w.sql:6: connection and after load statements take no ?placeholders"},
		{good + "generator id = seq\n", "w.sql:4: generator id: seq (the row number, alone) makes a column's rows"},
		{good + "transaction a weight 0\n  SELECT 1;\ntransaction b weight 0\n  SELECT 2;\n", "w.sql:4: every transaction has weight 0"},
		{good + "transaction a weight 1\nSELECT 1;\n", "w.sql:5: \"SELECT\": a line at the start is one of"},
		{good + "  colum k = seq\ntransaction a weight 1\n  SELECT 1;\n", "w.sql:4: \"colum\": after its CREATE TABLE, a table's lines are column NAME = GENERATOR"},
	} {
		_, err := parseSQLFile("w.sql", []byte(c.src), map[string]int64{"table-size": 10}, nil)
		if err == nil || !errors.Is(err, ErrSQLWorkload) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %q", c.src, err, c.want)
		}
	}
	_, err := parseSQLFile("w.sql", []byte(good+"set span = 5\ntransaction a weight 1\n  SELECT 1;\n"), nil, map[string]int64{"spam": 3})
	if err == nil || !strings.Contains(err.Error(), "--spam: the file sets no such variable (its variables: span)") {
		t.Errorf("an override the file does not set: %v", err)
	}
}

// TestEvalInt: the variables' arithmetic.
func TestEvalInt(t *testing.T) {
	for s, want := range map[string]int64{"7": 7, "1000/100": 10, "2+3*4": 14, "(2+3)*4": 20, "10-2-3": 5, "-4+10": 6, "17%5": 2, "1000-100+1": 901} {
		if got, err := evalInt(s); err != nil || got != want {
			t.Errorf("evalInt(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "1+", "2*(3", "4/0", "x", "1 2"} {
		if _, err := evalInt(s); err == nil {
			t.Errorf("evalInt(%q): no error", s)
		}
	}
}

// TestInterpolate: a statement sent as text gets its arguments as
// literals, strings escaped.
func TestInterpolate(t *testing.T) {
	got, err := interpolate("SELECT ? , ?", named([]driver.Value{int64(-3), "it's \\ a\x00"}))
	if err != nil || got != `SELECT -3 , 'it\'s \\ a\0'` {
		t.Errorf("interpolate: %q, %v", got, err)
	}
	// TPC-C's amounts: a sample EXPLAIN is given.
	if got, err := interpolate("UPDATE w SET ytd = ytd + ? WHERE id = ?", named([]driver.Value{1234.56, int64(1)})); err != nil || got != "UPDATE w SET ytd = ytd + 1234.56 WHERE id = 1" {
		t.Errorf("interpolate of a float: %q, %v", got, err)
	}
	if _, err := interpolate("SELECT ?", nil); err != nil {
		t.Errorf("no arguments: %v", err)
	}
	if _, err := interpolate("SELECT ?, ?", named([]driver.Value{int64(1)})); err == nil {
		t.Error("too few arguments: no error")
	}
}
