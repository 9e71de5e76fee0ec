package bench

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The SQL workload file: a workload the built-in engine runs, written as SQL
// with a few directives (docs/workload.md has the format and examples).
//
//	set span = 100                      # a variable; --workload-options "--span=50" overrides it
//	table customer rows {table-size}    # a table, its CREATE and how its rows are made
//	  CREATE TABLE customer (id INT PRIMARY KEY, code INT NOT NULL, name CHAR(30));
//	  column id = seq
//	  column code = seq
//	  column name = string "customer-####"
//	after load                          # statements run once the tables are loaded
//	  CREATE INDEX code ON customer (code);
//	connection                          # statements run once on every connection
//	  SET SESSION join_cache_level = 4;
//	generator lo = uniform 1 {table-size}-{span}+1
//	transaction by_range weight 10      # one event: BEGIN, its statements, COMMIT
//	  SELECT COUNT(*) FROM customer WHERE id BETWEEN ?lo AND ?lo+{span}-1;
//
// This file reads it (ParseSQLWorkload); sqlworkload.go loads and runs it.

// ErrSQLWorkload is wrapped by ParseSQLWorkload's errors, which name
// FILE:LINE.
var ErrSQLWorkload = errors.New("SQL workload file")

// sqlStmt is one statement of the file: its text with each ?name placeholder
// made a plain ?, and the generator value each ? takes.
type sqlStmt struct {
	line  int
	text  string // as prepared
	refs  []sqlRef
	query bool // returns a result set (a read)
}

// sqlRef is the value of one ? placeholder: a generator's plus an offset.
type sqlRef struct {
	gen    string
	offset int64
}

// sqlGen is a named or column generator: a distribution over [a, b], a
// string template, a list to pick from, or (columns only) the row number.
type sqlGen struct {
	name   string
	line   int
	kind   string // uniform gaussian special pareto zipfian default; string; pick; seq; cycle
	a, b   int64
	tmpl   string
	picks  []any // int64 or string
	perTxn bool  // drawn once per transaction, not per statement
}

// sqlTable is a table of the file: its CREATE, its row count and its
// columns' generators, in INSERT order.
type sqlTable struct {
	name   string
	line   int
	rows   int64
	create sqlStmt
	cols   []string
	gens   []*sqlGen
}

// sqlTxn is a transaction of the file: its statements, its weight in the
// mix, and whether it runs without BEGIN and COMMIT.
type sqlTxn struct {
	name       string
	line       int
	weight     int64
	autocommit bool
	stmts      []sqlStmt
}

// sqlFile is a parsed SQL workload file.
type sqlFile struct {
	name      string // the file's base name, for FILE:LINE
	vars      map[string]int64
	tables    []*sqlTable
	afterLoad []sqlStmt
	connect   []sqlStmt
	gens      map[string]*sqlGen
	txns      []*sqlTxn
}

var (
	sqlVarRef    = regexp.MustCompile(`\{([a-z][a-z0-9_-]*)\}`)
	sqlName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	sqlPlace     = regexp.MustCompile(`\?([A-Za-z_][A-Za-z0-9_]*)((?:[+-][0-9]+)*)`)
	sqlReadVerbs = []string{"SELECT", "WITH", "SHOW", "EXPLAIN", "DESCRIBE", "DESC", "VALUES", "TABLE", "CHECKSUM"}
)

// parseSQLFile reads src (the file name for messages). vars are the
// settings' variables (table-size, tables, range-size, threads); overrides
// replace the file's own set lines, and naming a variable the file does
// not set is an error.
func parseSQLFile(name string, src []byte, vars, overrides map[string]int64) (*sqlFile, error) {
	f := &sqlFile{name: name, vars: map[string]int64{}, gens: map[string]*sqlGen{}}
	maps.Copy(f.vars, vars)
	p := &sqlParser{f: f, overrides: overrides}
	lines := strings.Split(string(src), "\n")
	for i, raw := range lines {
		if err := p.line(i+1, strings.TrimRight(raw, " \t\r")); err != nil {
			return nil, err
		}
	}
	if err := p.endBlock(len(lines)); err != nil {
		return nil, err
	}
	for k := range overrides {
		if !p.set[k] {
			return nil, fmt.Errorf("%w %s: --%s: the file sets no such variable (%s)", ErrSQLWorkload, name, k, variablesText(p.set))
		}
	}
	if len(f.txns) == 0 {
		return nil, fmt.Errorf("%w %s: no transaction: a workload needs at least one (transaction NAME weight N, then its statements)", ErrSQLWorkload, name)
	}
	if !slices.ContainsFunc(f.txns, func(t *sqlTxn) bool { return t.weight > 0 }) {
		return nil, fmt.Errorf("%w %s:%d: every transaction has weight 0: give one a weight of 1 or more", ErrSQLWorkload, name, f.txns[0].line)
	}
	// Every ?name is a generator, checked now that all are read.
	check := func(st sqlStmt, where string) error {
		for _, r := range st.refs {
			g, ok := f.gens[r.gen]
			switch {
			case !ok:
				return fmt.Errorf("%w %s:%d: ?%s: no generator of that name (%s: %s)", ErrSQLWorkload, name, st.line, r.gen,
					where, strings.Join(slices.Sorted(maps.Keys(f.gens)), ", "))
			case r.offset != 0 && (g.kind == "string" || g.kind == "pick" && slices.ContainsFunc(g.picks, func(v any) bool { _, s := v.(string); return s })):
				return fmt.Errorf("%w %s:%d: ?%s%+d: an offset needs a number; %s makes strings", ErrSQLWorkload, name, st.line, r.gen, r.offset, r.gen)
			}
		}
		return nil
	}
	for _, t := range f.txns {
		for _, st := range t.stmts {
			if err := check(st, "transaction"); err != nil {
				return nil, err
			}
		}
	}
	for _, st := range append(slices.Clone(f.connect), f.afterLoad...) {
		if len(st.refs) > 0 {
			return nil, fmt.Errorf("%w %s:%d: connection and after load statements take no ?placeholders", ErrSQLWorkload, name, st.line)
		}
	}
	return f, nil
}

// variablesText lists the variables a file sets, for messages.
func variablesText(set map[string]bool) string {
	if len(set) == 0 {
		return "it sets none: set NAME = VALUE lines make them"
	}
	return "its variables: " + strings.Join(slices.Sorted(maps.Keys(set)), ", ")
}

// sqlHeaders are the words a line at the start may begin with.
var sqlHeaders = []string{"set", "generator", "table", "after", "connection", "transaction"}

// sqlParser is the state of parseSQLFile between lines.
type sqlParser struct {
	f         *sqlFile
	overrides map[string]int64
	set       map[string]bool // variables the file sets
	block     string          // table, after load, connection, transaction; "" at top level
	table     *sqlTable
	txn       *sqlTxn
	stmt      strings.Builder // a statement being read, up to its ;
	stmtLine  int
}

func (p *sqlParser) errorf(line int, format string, args ...any) error {
	return fmt.Errorf("%w %s:%d: %s", ErrSQLWorkload, p.f.name, line, fmt.Sprintf(format, args...))
}

// line reads one line of the file.
func (p *sqlParser) line(n int, l string) error {
	trimmed := strings.TrimSpace(l)
	if trimmed == "" || strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, "--") {
		return nil
	}
	if !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") {
		word, _, _ := strings.Cut(trimmed, " ")
		if !slices.Contains(sqlHeaders, word) {
			return p.errorf(n, "%q: a line at the start is one of set, generator, table, after load, connection, transaction (statements are indented under a block)", word)
		}
		if err := p.endBlock(n); err != nil {
			return err
		}
		return p.header(n, trimmed)
	}
	if p.block == "" {
		return p.errorf(n, "an indented line outside a block: indent only the lines of a table, after load, connection or transaction")
	}
	l, err := p.subst(n, trimmed)
	if err != nil {
		return err
	}
	if p.block == "table" && p.stmt.Len() == 0 && strings.HasPrefix(l, "column ") {
		return p.column(n, strings.TrimPrefix(l, "column "))
	}
	if p.block == "table" && p.stmt.Len() == 0 && p.table.create.text != "" {
		word, _, _ := strings.Cut(l, " ")
		return p.errorf(n, "%q: after its CREATE TABLE, a table's lines are column NAME = GENERATOR (indexes: after load)", word)
	}
	if p.stmt.Len() == 0 {
		p.stmtLine = n
	} else {
		p.stmt.WriteByte('\n')
	}
	p.stmt.WriteString(l)
	if strings.HasSuffix(l, ";") {
		return p.endStatement()
	}
	return nil
}

// subst replaces every {name} of l with its variable's value.
func (p *sqlParser) subst(n int, l string) (string, error) {
	var err error
	out := sqlVarRef.ReplaceAllStringFunc(l, func(m string) string {
		name := m[1 : len(m)-1]
		v, ok := p.f.vars[name]
		if !ok && err == nil {
			err = p.errorf(n, "{%s}: no such variable (set %s = ... above, or use one of %s)", name, name, strings.Join(slices.Sorted(maps.Keys(p.f.vars)), ", "))
		}
		return strconv.FormatInt(v, 10)
	})
	return out, err
}

// header reads a line at the start of a block, or a set or generator line.
func (p *sqlParser) header(n int, l string) error {
	word, rest, _ := strings.Cut(l, " ")
	rest = strings.TrimSpace(rest)
	switch word {
	case "set":
		name, expr, ok := strings.Cut(rest, "=")
		name = strings.TrimSpace(name)
		if !ok || !sqlVarRef.MatchString("{"+name+"}") {
			return p.errorf(n, "want set NAME = NUMBER (a name of lower-case letters, digits, - and _)")
		}
		if p.set == nil {
			p.set = map[string]bool{}
		}
		p.set[name] = true
		if v, ok := p.overrides[name]; ok {
			p.f.vars[name] = v
			return nil
		}
		expr, err := p.subst(n, strings.TrimSpace(expr))
		if err != nil {
			return err
		}
		v, err := evalInt(expr)
		if err != nil {
			return p.errorf(n, "set %s = %s: %v", name, expr, err)
		}
		p.f.vars[name] = v
	case "generator":
		name, def, ok := strings.Cut(rest, "=")
		name = strings.TrimSpace(name)
		if !ok || !sqlName.MatchString(name) {
			return p.errorf(n, "want generator NAME = KIND ... (uniform, gaussian, special, pareto, zipfian, default, string, pick)")
		}
		if g, dup := p.f.gens[name]; dup {
			return p.errorf(n, "generator %s is defined already, at line %d", name, g.line)
		}
		def, err := p.subst(n, strings.TrimSpace(def))
		if err != nil {
			return err
		}
		g, err := parseGen(def, false)
		if err != nil {
			return p.errorf(n, "generator %s: %v", name, err)
		}
		g.name, g.line = name, n
		p.f.gens[name] = g
	case "table":
		f := strings.Fields(rest)
		if len(f) != 3 || f[1] != "rows" || !sqlName.MatchString(f[0]) {
			return p.errorf(n, "want table NAME rows COUNT")
		}
		count, err := p.subst(n, f[2])
		if err != nil {
			return err
		}
		rows, err := evalInt(count)
		if err != nil || rows < 0 {
			return p.errorf(n, "table %s rows %s: want a count of 0 or more (%v)", f[0], count, err)
		}
		for _, t := range p.f.tables {
			if t.name == f[0] {
				return p.errorf(n, "table %s is defined already, at line %d", t.name, t.line)
			}
		}
		p.table = &sqlTable{name: f[0], line: n, rows: rows}
		p.block = "table"
	case "after", "connection":
		if l != "after load" && l != "connection" {
			return p.errorf(n, "want after load or connection alone on its line")
		}
		p.block = l
	case "transaction":
		f := strings.Fields(rest)
		if len(f) < 3 || f[1] != "weight" || !sqlName.MatchString(f[0]) || len(f) > 4 || len(f) == 4 && f[3] != "autocommit" {
			return p.errorf(n, "want transaction NAME weight N [autocommit]")
		}
		w, err := p.subst(n, f[2])
		if err != nil {
			return err
		}
		weight, err := evalInt(w)
		if err != nil || weight < 0 {
			return p.errorf(n, "transaction %s weight %s: want a whole number of 0 or more", f[0], w)
		}
		for _, t := range p.f.txns {
			if t.name == f[0] {
				return p.errorf(n, "transaction %s is defined already, at line %d", t.name, t.line)
			}
		}
		p.txn = &sqlTxn{name: f[0], line: n, weight: weight, autocommit: len(f) == 4}
		p.block = "transaction"
	default:
		return p.errorf(n, "%q: a line at the start is one of set, generator, table, after load, connection, transaction (statements are indented under a block)", word)
	}
	return nil
}

// column reads "NAME = GENERATOR" of a table.
func (p *sqlParser) column(n int, l string) error {
	name, def, ok := strings.Cut(l, "=")
	name = strings.TrimSpace(name)
	if !ok || !sqlName.MatchString(name) {
		return p.errorf(n, "want column NAME = GENERATOR (seq, cycle A B, uniform A B, string \"###\", pick ...)")
	}
	g, err := parseGen(strings.TrimSpace(def), true)
	if err != nil {
		return p.errorf(n, "column %s: %v", name, err)
	}
	p.table.cols = append(p.table.cols, name)
	p.table.gens = append(p.table.gens, g)
	return nil
}

// endStatement files the statement read so far in its block.
func (p *sqlParser) endStatement() error {
	text := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(p.stmt.String()), ";"))
	p.stmt.Reset()
	st, err := parseStmt(p.stmtLine, text)
	if err != nil {
		return p.errorf(p.stmtLine, "%v", err)
	}
	switch p.block {
	case "table":
		if p.table.create.text != "" {
			return p.errorf(st.line, "table %s has its CREATE TABLE already, at line %d: one statement per table (indexes: after load)", p.table.name, p.table.create.line)
		}
		p.table.create = st
	case "after load":
		p.f.afterLoad = append(p.f.afterLoad, st)
	case "connection":
		p.f.connect = append(p.f.connect, st)
	case "transaction":
		p.txn.stmts = append(p.txn.stmts, st)
	}
	return nil
}

// endBlock ends the block under way before line n.
func (p *sqlParser) endBlock(n int) error {
	if p.stmt.Len() > 0 {
		return p.errorf(p.stmtLine, "a statement without its closing ; (it runs to line %d)", n-1)
	}
	switch p.block {
	case "table":
		t := p.table
		if t.create.text == "" {
			return p.errorf(t.line, "table %s has no CREATE TABLE statement", t.name)
		}
		if len(t.cols) == 0 && t.rows > 0 {
			return p.errorf(t.line, "table %s has %d rows but no column lines to make them", t.name, t.rows)
		}
		p.f.tables = append(p.f.tables, t)
	case "transaction":
		if len(p.txn.stmts) == 0 {
			return p.errorf(p.txn.line, "transaction %s has no statements", p.txn.name)
		}
		p.f.txns = append(p.f.txns, p.txn)
	}
	p.block, p.table, p.txn = "", nil, nil
	return nil
}

// parseStmt turns ?name+K placeholders into ? and says whether the
// statement returns a result set.
func parseStmt(line int, text string) (sqlStmt, error) {
	st := sqlStmt{line: line}
	var err error
	st.text = sqlPlace.ReplaceAllStringFunc(text, func(m string) string {
		sub := sqlPlace.FindStringSubmatch(m)
		var off int64
		for _, t := range regexp.MustCompile(`[+-][0-9]+`).FindAllString(sub[2], -1) {
			v, perr := strconv.ParseInt(t, 10, 64)
			if perr != nil && err == nil {
				err = perr
			}
			off += v
		}
		st.refs = append(st.refs, sqlRef{gen: sub[1], offset: off})
		return "?"
	})
	if err != nil {
		return st, err
	}
	if strings.Count(st.text, "?") > len(st.refs) {
		return st, fmt.Errorf("a bare ?: name its generator (?id)")
	}
	fields := strings.Fields(st.text)
	if len(fields) == 0 {
		return st, fmt.Errorf("an empty statement")
	}
	verb := strings.ToUpper(strings.TrimLeft(fields[0], "("))
	st.query = slices.Contains(sqlReadVerbs, verb) ||
		verb == "HANDLER" && slices.ContainsFunc(fields, func(f string) bool { return strings.EqualFold(f, "READ") })
	return st, nil
}

// parseGen reads a generator's definition: KIND ARGS [per transaction].
// seq and cycle only make a column's rows.
func parseGen(def string, column bool) (*sqlGen, error) {
	g := &sqlGen{}
	if d, ok := strings.CutSuffix(def, " per transaction"); ok {
		if column {
			return nil, fmt.Errorf("per transaction: columns are drawn per row")
		}
		g.perTxn, def = true, strings.TrimSpace(d)
	}
	kind, args, _ := strings.Cut(def, " ")
	args = strings.TrimSpace(args)
	g.kind = kind
	switch kind {
	case "uniform", "gaussian", "special", "pareto", "zipfian", "default", "cycle":
		if kind == "cycle" && !column {
			return nil, fmt.Errorf("cycle makes a column's rows; a statement's generator draws (uniform ...)")
		}
		a, b, err := twoInts(args)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v", kind, args, err)
		}
		if a < 0 || b < a || b > 1<<32-1 {
			return nil, fmt.Errorf("%s %d %d: want 0 <= A <= B < 2^32", kind, a, b)
		}
		g.a, g.b = a, b
	case "seq":
		if !column || args != "" {
			return nil, fmt.Errorf("seq (the row number, alone) makes a column's rows")
		}
	case "string":
		s, err := strconv.Unquote(args)
		if err != nil || s == "" {
			return nil, fmt.Errorf("string %s: want a quoted template (\"###-@@@\": # a digit, @ a letter)", args)
		}
		g.tmpl = s
	case "pick":
		vals, err := pickValues(args)
		if err != nil {
			return nil, fmt.Errorf("pick %s: %v", args, err)
		}
		g.picks = vals
	default:
		return nil, fmt.Errorf("%q: want uniform, gaussian, special, pareto, zipfian or default A B, string \"TEMPLATE\", pick V1 V2 ...%s", kind,
			map[bool]string{true: ", seq or cycle A B", false: ""}[column])
	}
	return g, nil
}

// twoInts reads "A B", each an integer expression without spaces.
func twoInts(s string) (int64, int64, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("want two bounds, A B")
	}
	a, err := evalInt(f[0])
	if err != nil {
		return 0, 0, err
	}
	b, err := evalInt(f[1])
	return a, b, err
}

// pickValues reads a list of integers and 'quoted' or "quoted" strings.
func pickValues(s string) ([]any, error) {
	var out []any
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] == '\'' || s[0] == '"' {
			end := strings.IndexByte(s[1:], s[0])
			if end < 0 {
				return nil, fmt.Errorf("a string without its closing %c", s[0])
			}
			out = append(out, s[1:end+1])
			s = s[end+2:]
			continue
		}
		word, rest, _ := strings.Cut(s, " ")
		v, err := strconv.ParseInt(word, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q: want an integer or a quoted string", word)
		}
		out = append(out, v)
		s = rest
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("want one value or more")
	}
	return out, nil
}

// evalInt evaluates an integer expression of + - * / % and parentheses.
func evalInt(s string) (int64, error) {
	e := &exprParser{s: strings.ReplaceAll(s, " ", "")}
	v, err := e.sum()
	if regexp.MustCompile(`[0-9)]\s+[0-9(]`).MatchString(s) {
		err = errors.New("two numbers without an operator")
	}
	if err == nil && e.i < len(e.s) {
		err = fmt.Errorf("%q: unexpected %q", s, e.s[e.i:])
	}
	if err != nil {
		return 0, fmt.Errorf("%q: want a whole number or an expression of + - * / %% and ( )", s)
	}
	return v, nil
}

type exprParser struct {
	s string
	i int
}

func (e *exprParser) sum() (int64, error) {
	v, err := e.product()
	for err == nil && e.i < len(e.s) && (e.s[e.i] == '+' || e.s[e.i] == '-') {
		op := e.s[e.i]
		e.i++
		var w int64
		if w, err = e.product(); op == '+' {
			v += w
		} else {
			v -= w
		}
	}
	return v, err
}

func (e *exprParser) product() (int64, error) {
	v, err := e.atom()
	for err == nil && e.i < len(e.s) && strings.IndexByte("*/%", e.s[e.i]) >= 0 {
		op := e.s[e.i]
		e.i++
		var w int64
		if w, err = e.atom(); err != nil {
			break
		}
		switch {
		case op == '*':
			v *= w
		case w == 0:
			return 0, errors.New("division by zero")
		case op == '/':
			v /= w
		default:
			v %= w
		}
	}
	return v, err
}

func (e *exprParser) atom() (int64, error) {
	if e.i < len(e.s) && e.s[e.i] == '(' {
		e.i++
		v, err := e.sum()
		if err != nil || e.i >= len(e.s) || e.s[e.i] != ')' {
			return 0, errors.New("unbalanced ( )")
		}
		e.i++
		return v, nil
	}
	neg := false
	if e.i < len(e.s) && e.s[e.i] == '-' {
		neg = true
		e.i++
	}
	j := e.i
	for j < len(e.s) && e.s[j] >= '0' && e.s[j] <= '9' {
		j++
	}
	if j == e.i {
		return 0, errors.New("a number expected")
	}
	v, err := strconv.ParseInt(e.s[e.i:j], 10, 64)
	e.i = j
	if neg {
		v = -v
	}
	return v, err
}
