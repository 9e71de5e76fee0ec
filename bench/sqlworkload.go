package bench

import (
	"context"
	"crypto/sha256"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/perfbisect/perfbisect/bench/dial"
)

// SQLWorkload is a SQL workload file (sqlfile.go has its format) as a
// Workload run by the built-in engine: Prepare creates its tables and loads
// their rows from the seed (the same rows for every revision), then runs
// its after load statements; Run opens a connection per thread, runs its
// connection statements and prepares its transactions' statements there
// (sent as text where the server refuses to prepare one), then runs events:
// a transaction drawn by weight, its ?placeholders filled from its
// generators. Counting, warm-up, window and errors are Run's. Make one with
// NewSQLWorkload.
type SQLWorkload struct {
	// Path is the file, absolute.
	Path string
	// Options are the engine's settings: Threads, Time, Warmup, RandSeed,
	// the distributions' parameters (RandType for "default" generators),
	// Percentile, IgnoreErrors, ReportInterval. Workload is the file's name.
	Options Options
	// Vars are the file's variables and the settings' (table-size, tables,
	// range-size) as the file was read with them.
	Vars map[string]int64
	// Digest is the hex SHA-256 of the file's content.
	Digest string

	file *sqlFile
	prog *sqlProgram
}

var sqlSetLine = regexp.MustCompile(`(?m)^set\s+([a-z][a-z0-9_-]*)\s*=`)

// NewSQLWorkload reads the SQL workload file at path with the settings o
// (their table-size, tables and range-size are the file's {table-size},
// {tables} and {range-size}). options are sysbench-style --name=value
// words: a variable the file sets (--span=50), else one of the engine's
// sysbench options (--rand-type=uniform, --mysql-ignore-errors=...).
// Errors wrap ErrSQLWorkload (naming FILE:LINE), ErrUnknownOption or
// ErrInvalidOption.
func NewSQLWorkload(path string, o Options, options []string) (*SQLWorkload, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrSQLWorkload, path, err)
	}
	src, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrSQLWorkload, path, errors.Unwrap(err))
	}
	declared := map[string]bool{}
	for _, m := range sqlSetLine.FindAllSubmatch(src, -1) {
		declared[string(m[1])] = true
	}
	overrides := map[string]int64{}
	for _, a := range options {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || !ok {
			return nil, fmt.Errorf("%w: %q: want --name=value (a variable of the file, or a sysbench option)", ErrInvalidOption, a)
		}
		if declared[name] {
			v, err := evalInt(value)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrInvalidOption, a, err)
			}
			overrides[name] = v
			continue
		}
		if _, err := o.Set(name, value); err != nil {
			if errors.Is(err, ErrUnknownOption) {
				vars := slices.Sorted(maps.Keys(declared))
				set := map[string]bool{}
				for _, v := range vars {
					set[v] = true
				}
				return nil, fmt.Errorf("%w: %s: neither a variable the file sets (%s) nor a sysbench option", ErrUnknownOption, a, variablesText(set))
			}
			return nil, err
		}
	}
	o.Workload = filepath.Base(abs)
	if err := o.validate(); err != nil {
		return nil, err
	}
	vars := map[string]int64{"table-size": int64(o.TableSize), "tables": int64(o.Tables), "range-size": int64(o.RangeSize)}
	f, err := parseSQLFile(o.Workload, src, vars, overrides)
	if err != nil {
		return nil, err
	}
	for _, g := range f.gens {
		if g.kind == "zipfian" && o.RandZipfianExp <= 0 {
			return nil, fmt.Errorf("%w %s:%d: zipfian needs --rand-zipfian-exp > 0", ErrSQLWorkload, o.Workload, g.line)
		}
	}
	sum := sha256.Sum256(src)
	w := &SQLWorkload{Path: abs, Options: o, Vars: f.vars, Digest: hex.EncodeToString(sum[:]), file: f}
	w.prog = newSQLProgram(f)
	return w, nil
}

// Name is the file's name.
func (w *SQLWorkload) Name() string { return w.Options.Workload }

// varList is the variables as name=value, sorted.
func (w *SQLWorkload) varList() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(w.Vars)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, w.Vars[k]))
	}
	return strings.Join(parts, " ")
}

// Summary says the file, its variables, threads, window and seed.
func (w *SQLWorkload) Summary() string {
	o := w.Options
	return fmt.Sprintf("%s (%s), %d thread(s), %s ids by default, %s window after %s warm-up, rand-seed %d, file %s (content %.12s), built-in",
		w.Name(), w.varList(), o.Threads, o.RandType, o.Time, o.Warmup, o.RandSeed, w.Path, w.Digest)
}

// Threads is Options.Threads.
func (w *SQLWorkload) Threads() int { return w.Options.Threads }

// WithThreads returns a copy at n threads.
func (w *SQLWorkload) WithThreads(n int) Workload {
	c := *w
	c.Options.Threads = n
	return &c
}

// Percentile is Options.Percentile.
func (w *SQLWorkload) Percentile() float64 { return w.Options.Percentile }

// Prepare creates the file's tables and loads their rows (up to Threads
// tables at once), then runs its after load statements.
func (w *SQLWorkload) Prepare(ctx context.Context, conn Connection) error {
	db, cfg, err := dial.DB(conn.DSN())
	if err != nil {
		return err
	}
	defer db.Close()
	if err := dial.EnsureDatabase(ctx, db, cfg); err != nil {
		return fmt.Errorf("prepare: database %q: %w", cfg.DBName, err)
	}
	seed := w.Options.seed()
	tables := w.file.tables
	err = loadTables(ctx, db, cfg, len(tables), w.Options.Threads, func(k int) *tableLoad {
		return w.tableLoad(tables[k-1], seed, k)
	})
	if err != nil {
		return fmt.Errorf("prepare %s: %w", w.Name(), err)
	}
	for _, st := range w.file.afterLoad {
		if _, err := db.ExecContext(ctx, st.text); err != nil {
			return fmt.Errorf("prepare %s: %s:%d: %s: %w", w.Name(), w.Name(), st.line, oneLine(st.text), err)
		}
	}
	return nil
}

// oneLine is a statement on one line, for messages.
func oneLine(q string) string {
	return strings.Join(strings.Fields(q), " ")
}

// tableLoad is the load of table t, the k-th of the file, its rows drawn
// from seed.
func (w *SQLWorkload) tableLoad(t *sqlTable, seed int64, k int) *tableLoad {
	r := NewRand(w.Options, seed, streamSQLTable+uint64(k))
	return &tableLoad{
		name:   fmt.Sprintf("%s:%d table %s", w.Name(), t.line, t.name),
		before: []ddl{{"create table", t.create.text}},
		prefix: "INSERT INTO " + t.name + " (" + strings.Join(t.cols, ", ") + ") VALUES ",
		rows:   int(t.rows),
		appendRow: func(buf []byte, id int) []byte {
			buf = append(buf, '(')
			for i, g := range t.gens {
				if i > 0 {
					buf = append(buf, ',')
				}
				switch v := g.column(r, int64(id)).(type) {
				case int64:
					buf = strconv.AppendInt(buf, v, 10)
				case string:
					buf = append(buf, quoteString(v)...)
				}
			}
			return append(buf, ')')
		},
	}
}

// Run measures one window of the file's transactions (Run's rules).
func (w *SQLWorkload) Run(ctx context.Context, conn Connection, hooks Hooks) (*Result, error) {
	return run(ctx, conn.DSN(), w.Options, w.prog, hooks)
}

// Cleanup drops the file's tables, the last first.
func (w *SQLWorkload) Cleanup(ctx context.Context, conn Connection) error {
	db, _, err := dial.DB(conn.DSN())
	if err != nil {
		return err
	}
	defer db.Close()
	for i := len(w.file.tables) - 1; i >= 0; i-- {
		if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+w.file.tables[i].name); err != nil {
			return fmt.Errorf("cleanup %s: %w", w.Name(), err)
		}
	}
	return nil
}

// Identity names the file, its content, its variables and the engine's
// settings.
func (w *SQLWorkload) Identity() map[string]string {
	o := w.Options
	ignore := make([]string, len(o.IgnoreErrors))
	for i, c := range o.IgnoreErrors {
		ignore[i] = strconv.Itoa(int(c))
	}
	fields := map[string]string{
		"file": w.Path, "file content": w.Digest[:16], "variables": w.varList(),
		"threads": fmt.Sprint(o.Threads), "time": o.Time.String(), "warmup": o.Warmup.String(),
		"rand-seed": fmt.Sprint(o.RandSeed), "rand": w.randKey(), "percentile": fmt.Sprint(o.Percentile),
		"ignore-errors": strings.Join(ignore, ","),
	}
	return IdentityOf(fields)
}

// randKey is the distributions' settings.
func (w *SQLWorkload) randKey() string {
	o := w.Options
	return fmt.Sprintf("%s/%d/%d/%d/%g/%g", o.RandType, o.RandSpecIter, o.RandSpecPct, o.RandSpecRes, o.RandParetoH, o.RandZipfianExp)
}

// DataKey is the file's content, its variables, the seed and the
// distributions' settings.
func (w *SQLWorkload) DataKey() string {
	return fmt.Sprintf("sqlfile %s vars=%s seed=%d rand=%s", w.Digest, w.varList(), w.Options.RandSeed, w.randKey())
}

// ClientInProcess is true: the built-in engine runs it.
func (w *SQLWorkload) ClientInProcess() bool { return true }

// column draws a column's value for row id.
func (g *sqlGen) column(r *Rand, id int64) any {
	switch g.kind {
	case "seq":
		return id
	case "cycle":
		return g.a + (id-1)%(g.b-g.a+1)
	}
	return g.draw(r)
}

// draw draws the generator's value: an int64 or a string.
func (g *sqlGen) draw(r *Rand) any {
	a, b := uint32(g.a), uint32(g.b)
	switch g.kind {
	case "uniform":
		return int64(r.Uniform(a, b))
	case "gaussian":
		return int64(r.Gaussian(a, b))
	case "special":
		return int64(r.Special(a, b))
	case "pareto":
		return int64(r.Pareto(a, b))
	case "zipfian":
		return int64(r.Zipfian(a, b))
	case "default":
		return int64(r.Default(a, b))
	case "string":
		return r.String(g.tmpl)
	case "pick":
		return g.picks[r.Uniform(0, uint32(len(g.picks)-1))]
	}
	return nil
}

// streamSQLTable + k is the random stream of the rows of a SQL workload
// file's k-th table.
const streamSQLTable = 4 << 32

// sqlProgram runs a SQL workload file's events (program).
type sqlProgram struct {
	f     *sqlFile
	stmts []sqlStmt // every transaction's statements, numbered as session.named
	first []int     // the number of each transaction's first statement
	cum   []int64   // cumulative weights of the transactions
}

func newSQLProgram(f *sqlFile) *sqlProgram {
	p := &sqlProgram{f: f}
	var total int64
	for _, t := range f.txns {
		p.first = append(p.first, len(p.stmts))
		p.stmts = append(p.stmts, t.stmts...)
		total += t.weight
		p.cum = append(p.cum, total)
	}
	return p
}

// where names a statement for messages: FILE:LINE.
func (p *sqlProgram) where(st sqlStmt) string {
	return fmt.Sprintf("%s:%d", p.f.name, st.line)
}

// kinds are the transactions' names.
func (p *sqlProgram) kinds() []string {
	names := make([]string, len(p.f.txns))
	for i, t := range p.f.txns {
		names[i] = t.name
	}
	return names
}

// prepare runs the connection statements as text and prepares the
// transactions' statements.
func (p *sqlProgram) prepare(ctx context.Context, s *session) error {
	for _, st := range p.f.connect {
		if _, err := s.conn.(driver.ExecerContext).ExecContext(ctx, st.text, nil); err != nil {
			return &StatementError{Thread: s.thread, Statement: p.where(st), SQL: oneLine(st.text), Err: err}
		}
	}
	s.named = make([]driver.Stmt, len(p.stmts))
	for i, st := range p.stmts {
		var err error
		if s.named[i], err = s.prepareNamed(ctx, p.where(st), st.text); err != nil {
			return err
		}
	}
	return nil
}

// event runs a transaction drawn by weight: BEGIN (unless autocommit), its
// statements with their ?placeholders drawn (once per statement, or once
// per transaction for generators so defined), COMMIT.
func (p *sqlProgram) event(ctx context.Context, t *thread, c *counts) error {
	total := p.cum[len(p.cum)-1]
	pick := int64(t.rnd.Uniform(1, uint32(total)))
	k, _ := slices.BinarySearch(p.cum, pick)
	txn := p.f.txns[k]
	c.kind = k
	var perTxn map[string]any
	if !txn.autocommit {
		if err := t.sess.transaction(ctx, true, c); err != nil {
			return err
		}
	}
	var args [16]driver.Value
	for j, st := range txn.stmts {
		vals := args[:0]
		var drawn map[string]any
		for _, ref := range st.refs {
			g := p.f.gens[ref.gen]
			var v any
			switch {
			case g.perTxn:
				if perTxn == nil {
					perTxn = map[string]any{}
				}
				if v = perTxn[g.name]; v == nil {
					v = g.draw(t.rnd)
					perTxn[g.name] = v
				}
			case len(st.refs) == 1:
				v = g.draw(t.rnd)
			default:
				if drawn == nil {
					drawn = map[string]any{}
				}
				if v = drawn[g.name]; v == nil {
					v = g.draw(t.rnd)
					drawn[g.name] = v
				}
			}
			if n, ok := v.(int64); ok {
				v = n + ref.offset
			}
			vals = append(vals, v)
		}
		if err := t.sess.runNamed(ctx, p.first[k]+j, p.where(st), st, c, vals); err != nil {
			return err
		}
	}
	if !txn.autocommit {
		return t.sess.transaction(ctx, false, c)
	}
	return nil
}

// prepareNamed prepares q as the statement name, or, where the server
// will not prepare it (error 1295: HANDLER on some servers), keeps it to
// send as text with its arguments interpolated.
func (s *session) prepareNamed(ctx context.Context, name, q string) (driver.Stmt, error) {
	st, err := s.conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == erUnsupportedPS {
		s.emulated = append(s.emulated, name)
		return &textStmt{conn: s.conn, q: q}, nil
	}
	if err != nil {
		return nil, &StatementError{Thread: s.thread, Statement: name, SQL: oneLine(q), Prepare: true, Err: err}
	}
	return st, nil
}

// runNamed executes the program's statement i (st, named name) with args:
// a query's result set is read off and counted as a read; otherwise a
// statement that changed rows is a write, one that did not is other.
func (s *session) runNamed(ctx context.Context, i int, name string, st sqlStmt, c *counts, args []driver.Value) error {
	var err error
	began := s.clockStart()
	if st.query {
		if err = s.queryStmt(ctx, s.named[i], args); err == nil {
			c.reads++
		}
	} else {
		var res driver.Result
		if res, err = s.named[i].(driver.StmtExecContext).ExecContext(ctx, s.bind(args)); err == nil {
			var n int64
			if n, err = res.RowsAffected(); err == nil && n > 0 {
				c.writes++
			} else if err == nil {
				c.other++
			}
		}
	}
	if err != nil {
		return &StatementError{Thread: s.thread, Statement: name, SQL: oneLine(st.text), Args: anys(args), Err: err}
	}
	if s.clock != nil {
		s.timed(time.Since(began), name, oneLine(st.text), args)
	}
	return nil
}

// Metrics are StandardMetrics, or QueryMetrics when every transaction of
// the file is autocommit (its events are not transactions).
func (w *SQLWorkload) Metrics() []string {
	for _, t := range w.file.txns {
		if !t.autocommit {
			return StandardMetrics
		}
	}
	return QueryMetrics
}
