package bench

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// session is one thread's connection with its prepared statements, like a
// sysbench thread's: stmts[t][k] is statement kind k on table t+1, begin and
// commit are BEGIN and COMMIT; each is prepared once and executed for the
// whole run.
type session struct {
	thread int
	connID int64 // the server's id of the connection (for KILL)
	conn   driver.Conn
	stmts  [][numStmtKinds]driver.Stmt
	begin  driver.Stmt
	commit driver.Stmt
	// legacy are oltp_legacy's statements on its one table (nil otherwise).
	legacy []driver.Stmt
	// named are a program's statements (prepareNamed), by its numbering.
	named []driver.Stmt
	args  []driver.NamedValue // arguments of the statement being executed
	// emulated names the statements the server refused to prepare, which
	// are sent as text instead (textStmt).
	emulated []string
	// clock times the statements (Hooks.Statements); nil: not timed.
	clock *stmtClock
}

// erUnsupportedPS is the server's error for a statement its prepared
// statement protocol does not take: ER_UNSUPPORTED_PS, 1295 ("This command
// is not supported in the prepared statement protocol yet"), which MariaDB
// 10.0 and MySQL 5.x give for BEGIN.
const erUnsupportedPS = 1295

// textStmt is a statement without parameters that the server refused to
// prepare (erUnsupportedPS), executed as text (COM_QUERY) every time: what
// sysbench 1.0 does for such a statement (its client-side emulation of
// prepared statements).
type textStmt struct {
	conn driver.Conn
	q    string
}

func (s *textStmt) Close() error  { return nil }
func (s *textStmt) NumInput() int { return -1 }

func (s *textStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s *textStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

func (s *textStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	q, err := interpolate(s.q, args)
	if err != nil {
		return nil, err
	}
	return s.conn.(driver.ExecerContext).ExecContext(ctx, q, nil)
}

func (s *textStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	q, err := interpolate(s.q, args)
	if err != nil {
		return nil, err
	}
	return s.conn.(driver.QueryerContext).QueryContext(ctx, q, nil)
}

// named numbers args as a statement's arguments.
func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, a := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return out
}

// interpolate puts args into q's ? placeholders, in order, as SQL
// literals: numbers as they are, strings quoted with MySQL's escapes (a
// statement sent as text because the server would not prepare it, or the
// sample of a timed statement that EXPLAIN is given).
func interpolate(q string, args []driver.NamedValue) (string, error) {
	if len(args) == 0 {
		return q, nil
	}
	var b strings.Builder
	i := 0
	for _, part := range strings.SplitAfter(q, "?") {
		if !strings.HasSuffix(part, "?") {
			b.WriteString(part)
			continue
		}
		b.WriteString(part[:len(part)-1])
		if i >= len(args) {
			return "", fmt.Errorf("%s: sent as text: more ? than the %d arguments", q, len(args))
		}
		switch v := args[i].Value.(type) {
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		case float64:
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		case string:
			b.WriteString(quoteString(v))
		case []byte:
			b.WriteString(quoteString(string(v)))
		case nil:
			b.WriteString("NULL")
		default:
			return "", fmt.Errorf("%s: sent as text: argument %d is a %T", q, i+1, v)
		}
		i++
	}
	if i != len(args) {
		return "", fmt.Errorf("%s: sent as text: %d ? for %d arguments", q, i, len(args))
	}
	return b.String(), nil
}

// quoteString is s as a MySQL string literal.
func quoteString(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "'", "\\'", "\x00", "\\0", "\n", "\\n", "\r", "\\r", "\x1a", "\\Z")
	return "'" + r.Replace(s) + "'"
}

// openSession opens a connection with connector and prepares kinds on each of
// the tables, and BEGIN and COMMIT when trx; with legacyTable, oltp_legacy's
// statements on that table instead of kinds (sb_oltp.c prepares them all when a
// thread connects).
func openSession(ctx context.Context, connector driver.Connector, thread, tables int, kinds []stmtKind, trx bool, legacyTable string) (*session, error) {
	conn, err := connector.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("thread %d: connect: %w", thread, err)
	}
	s := &session{thread: thread, conn: conn, stmts: make([][numStmtKinds]driver.Stmt, tables)}
	if err := s.connectionID(ctx); err != nil {
		s.close(true)
		return nil, &StatementError{Thread: thread, Statement: sqlConnectionID, SQL: sqlConnectionID, Err: err}
	}
	prepare := func(name, q string) (driver.Stmt, error) {
		st, err := conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == erUnsupportedPS && !strings.Contains(q, "?") {
			s.emulated = append(s.emulated, name)
			return &textStmt{conn: conn, q: q}, nil
		}
		if err != nil {
			s.close(true)
			return nil, &StatementError{Thread: thread, Statement: name, SQL: q, Prepare: true, Err: err}
		}
		return st, nil
	}
	if trx {
		if s.begin, err = prepare(sqlBegin, sqlBegin); err != nil {
			return nil, err
		}
		if s.commit, err = prepare(sqlCommit, sqlCommit); err != nil {
			return nil, err
		}
	}
	if legacyTable != "" {
		s.legacy = make([]driver.Stmt, numLegacyStmts)
		for k := range numLegacyStmts {
			if s.legacy[k], err = prepare(k.String(), k.sql(legacyTable)); err != nil {
				return nil, err
			}
		}
		return s, nil
	}
	for t := range tables {
		for _, k := range kinds {
			if s.stmts[t][k], err = prepare(k.String(), k.sql(t+1)); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

const sqlConnectionID = "SELECT CONNECTION_ID()"

// connectionID reads the server's id of the session's connection.
func (s *session) connectionID(ctx context.Context) error {
	rows, err := s.conn.(driver.QueryerContext).QueryContext(ctx, sqlConnectionID, nil)
	if err != nil {
		return err
	}
	defer rows.Close()
	dest := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(dest); err != nil {
		return err
	}
	s.connID, err = connIDOf(dest[0])
	return err
}

// connIDOf is CONNECTION_ID()'s value as the driver gave it: int64, text,
// or uint64 (MySQL 5.6 types it BIGINT UNSIGNED).
func connIDOf(v driver.Value) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case uint64:
		if v > math.MaxInt64 {
			return 0, fmt.Errorf("connection id %d out of range", v)
		}
		return int64(v), nil
	case []byte:
		return strconv.ParseInt(string(v), 10, 64)
	}
	return 0, fmt.Errorf("unexpected %T %v", v, v)
}

// close releases the statements and the connection. broken closes the
// connection without talking to the server.
func (s *session) close(broken bool) {
	if !broken {
		for t := range s.stmts {
			for _, st := range s.stmts[t] {
				if st != nil {
					_ = st.Close()
				}
			}
		}
		for _, st := range append(append([]driver.Stmt{s.begin, s.commit}, s.legacy...), s.named...) {
			if st != nil {
				_ = st.Close()
			}
		}
	}
	_ = s.conn.Close()
}

// counts are statements by sysbench's classes.
type counts struct {
	reads, writes, other int64
	// kind is the event's transaction among the program's kinds (not
	// added by add: it says which, not how many).
	kind int
}

func (c *counts) add(d counts) {
	c.reads += d.reads
	c.writes += d.writes
	c.other += d.other
}

func (c counts) total() int64 { return c.reads + c.writes + c.other }

// bind sets the arguments of the next execution.
func (s *session) bind(args []driver.Value) []driver.NamedValue {
	for len(s.args) < len(args) {
		s.args = append(s.args, driver.NamedValue{Ordinal: len(s.args) + 1})
	}
	for i, a := range args {
		s.args[i].Value = a
	}
	return s.args[:len(args)]
}

// query runs a result-set statement, reads all its rows and counts a read.
func (s *session) query(ctx context.Context, table int, k stmtKind, c *counts, args ...driver.Value) error {
	began := s.clockStart()
	err := s.queryStmt(ctx, s.stmts[table-1][k], args)
	if err != nil {
		return &StatementError{Thread: s.thread, Statement: k.String(), SQL: k.sql(table), Args: anys(args), Err: err}
	}
	if s.clock != nil {
		s.timed(time.Since(began), k.String(), k.sql(table), args)
	}
	c.reads++
	return nil
}

// queryStmt executes st and reads its whole result set off the connection
// without converting the rows into values, as sysbench does (it stores the
// result and frees it unread): the server's work and the bytes on the wire are
// the same, the client's CPU is not spent on values nobody looks at.
func (s *session) queryStmt(ctx context.Context, st driver.Stmt, args []driver.Value) error {
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, s.bind(args))
	if err != nil {
		return err
	}
	return rows.Close()
}

// exec runs a DML statement and counts a write if it changed rows, other if not.
func (s *session) exec(ctx context.Context, table int, k stmtKind, c *counts, args ...driver.Value) error {
	began := s.clockStart()
	res, err := s.stmts[table-1][k].(driver.StmtExecContext).ExecContext(ctx, s.bind(args))
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil {
		return &StatementError{Thread: s.thread, Statement: k.String(), SQL: k.sql(table), Args: anys(args), Err: err}
	}
	if s.clock != nil {
		s.timed(time.Since(began), k.String(), k.sql(table), args)
	}
	if n > 0 {
		c.writes++
	} else {
		c.other++
	}
	return nil
}

// transaction executes the prepared BEGIN (begin true) or COMMIT, as sysbench
// does, and counts it as other.
func (s *session) transaction(ctx context.Context, begin bool, c *counts) error {
	st, q := s.commit, sqlCommit
	if begin {
		st, q = s.begin, sqlBegin
	}
	began := s.clockStart()
	if _, err := st.(driver.StmtExecContext).ExecContext(ctx, nil); err != nil {
		return &StatementError{Thread: s.thread, Statement: q, SQL: q, Err: err}
	}
	if s.clock != nil {
		s.timed(time.Since(began), q, q, nil)
	}
	c.other++
	return nil
}

// plain sends a statement as text (COM_QUERY), as sysbench sends the ROLLBACK
// after an ignored error; not counted.
func (s *session) plain(ctx context.Context, q string) error {
	if _, err := s.conn.(driver.ExecerContext).ExecContext(ctx, q, nil); err != nil {
		return &StatementError{Thread: s.thread, Statement: q, SQL: q, Err: err}
	}
	return nil
}

// anys copies statement arguments for an error message.
func anys(args []driver.Value) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}
