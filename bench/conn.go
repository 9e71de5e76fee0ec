package bench

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// openDB opens a pool for dsn with the settings the workload depends on:
// server-side prepared statements (interpolateParams off), affected rows = changed
// rows (clientFoundRows off, so a no-op UPDATE counts as "other" like in
// sysbench), no driver log lines (errors are returned), and no idle connections
// (a closed connection is really closed; a reconnect really connects).
//
// With conns, connections are dialled by conns (blocking sockets, closed all at
// once when the run is cancelled), unless the DSN needs the driver's own dialling:
// a custom network or read/write timeouts.
func openDB(dsn string, conns *connSet) (*sql.DB, *mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("parse DSN %q: %w", redactDSN(dsn), err)
	}
	switch cfg.Net {
	case "tcp", "tcp4", "tcp6", "unix":
		if conns != nil && cfg.ReadTimeout == 0 && cfg.WriteTimeout == 0 && cfg.DialFunc == nil {
			cfg.DialFunc = conns.dial
		}
	}
	cfg.InterpolateParams = false
	cfg.ClientFoundRows = false
	cfg.MultiStatements = false
	cfg.Logger = &mysql.NopLogger{}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("DSN %q: %w", redactDSN(dsn), err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxIdleConns(0)
	return db, cfg, nil
}

// redactDSN hides the password of a DSN for messages.
func redactDSN(dsn string) string {
	at := strings.LastIndex(dsn, "@")
	if at < 0 {
		return dsn
	}
	if colon := strings.Index(dsn[:at], ":"); colon >= 0 {
		return dsn[:colon] + ":***" + dsn[at:]
	}
	return dsn
}

// session is one thread's connection with its prepared statements: stmts[t][k]
// is statement kind k on table t+1, prepared once and reused for the whole run.
type session struct {
	thread int
	connID int64 // the server's id of the connection (for KILL)
	conn   *sql.Conn
	stmts  [][numStmtKinds]*sql.Stmt
}

// openSession takes a new connection from db and prepares kinds on each of the
// tables.
func openSession(ctx context.Context, db *sql.DB, thread, tables int, kinds []stmtKind) (*session, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("thread %d: connect: %w", thread, err)
	}
	s := &session{thread: thread, conn: conn, stmts: make([][numStmtKinds]*sql.Stmt, tables)}
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&s.connID); err != nil {
		s.close(true)
		return nil, &StatementError{Thread: thread, Statement: "SELECT CONNECTION_ID()", SQL: "SELECT CONNECTION_ID()", Err: err}
	}
	for t := range tables {
		for _, k := range kinds {
			q := k.sql(t + 1)
			st, err := conn.PrepareContext(ctx, q)
			if err != nil {
				s.close(true)
				return nil, &StatementError{Thread: thread, Statement: k.String(), SQL: q, Prepare: true, Err: err}
			}
			s.stmts[t][k] = st
		}
	}
	return s, nil
}

// close releases the statements and the connection. broken discards the
// connection without talking to the server.
func (s *session) close(broken bool) {
	if broken {
		// Tell database/sql the connection is bad so it is closed, not reused.
		_ = s.conn.Raw(func(any) error { return driver.ErrBadConn })
		_ = s.conn.Close()
		return
	}
	for t := range s.stmts {
		for _, st := range s.stmts[t] {
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
}

func (c *counts) add(d counts) {
	c.reads += d.reads
	c.writes += d.writes
	c.other += d.other
}

func (c counts) total() int64 { return c.reads + c.writes + c.other }

// query runs a result-set statement, reads all its rows and counts a read.
func (s *session) query(ctx context.Context, table int, k stmtKind, c *counts, args ...any) error {
	rows, err := s.stmts[table-1][k].QueryContext(ctx, args...)
	if err == nil {
		for rows.Next() {
		}
		err = rows.Err()
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return &StatementError{Thread: s.thread, Statement: k.String(), SQL: k.sql(table), Args: args, Err: err}
	}
	c.reads++
	return nil
}

// exec runs a DML statement and counts a write if it changed rows, other if not.
func (s *session) exec(ctx context.Context, table int, k stmtKind, c *counts, args ...any) error {
	res, err := s.stmts[table-1][k].ExecContext(ctx, args...)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil {
		return &StatementError{Thread: s.thread, Statement: k.String(), SQL: k.sql(table), Args: args, Err: err}
	}
	if n > 0 {
		c.writes++
	} else {
		c.other++
	}
	return nil
}

// plain sends a statement as text (COM_QUERY), as sysbench sends BEGIN and
// COMMIT, and counts it as other when c is not nil.
func (s *session) plain(ctx context.Context, q string, c *counts) error {
	if _, err := s.conn.ExecContext(ctx, q); err != nil {
		return &StatementError{Thread: s.thread, Statement: q, SQL: q, Err: err}
	}
	if c != nil {
		c.other++
	}
	return nil
}

// ensureDatabase creates the DSN's database when the server says it does not
// exist (error 1049), so that Prepare works on a fresh datadir.
func ensureDatabase(ctx context.Context, db *sql.DB, cfg *mysql.Config) error {
	if cfg.DBName == "" {
		return nil
	}
	err := db.PingContext(ctx)
	var me *mysql.MySQLError
	if err == nil || !errors.As(err, &me) || me.Number != 1049 {
		return err
	}
	c2 := cfg.Clone()
	c2.DBName = ""
	conn, err := mysql.NewConnector(c2)
	if err != nil {
		return err
	}
	root := sql.OpenDB(conn)
	defer root.Close()
	q := "CREATE DATABASE IF NOT EXISTS `" + strings.ReplaceAll(cfg.DBName, "`", "``") + "`"
	if _, err := root.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("%s: %w", q, err)
	}
	return nil
}

// killConnections kills server connections ids, on a connection of its own
// opened with cfg (without a run's dialler), within killTimeout. A client that
// gives up on a statement only closes its socket; the server goes on with the
// statement (a lock wait, a CREATE INDEX) until it next talks to the client.
// Best effort: errors are ignored (the server may be gone, the thread done).
func killConnections(cfg *mysql.Config, ids []int64) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	c := cfg.Clone()
	c.DialFunc = nil
	conn, err := mysql.NewConnector(c)
	if err != nil {
		return
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	for _, id := range ids {
		_, _ = db.ExecContext(ctx, "KILL "+strconv.FormatInt(id, 10))
	}
}
