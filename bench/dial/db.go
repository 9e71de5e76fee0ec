// Package dial is the connection plumbing of perfbisect's workloads: DSNs as
// the workloads need them (Config), database/sql pools for loading tables
// (DB), connectors whose sockets wait in poll(2) like libmysqlclient's
// (Connector, Set, dial.go), and the administration a run needs around
// them: creating the database, listing and killing a run's server threads,
// telling a lost connection from a server error.
package dial

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// KillTimeout bounds listing and killing a run's server threads when a run
// is aborted (Kill, ServerThreads).
const KillTimeout = 2 * time.Second

// Config parses dsn and sets what the workload depends on: server-side
// prepared statements (interpolateParams off), affected rows = changed rows
// (clientFoundRows off, so a no-op UPDATE counts as "other" like in sysbench), no
// multi-statements, and no driver log lines (errors are returned).
func Config(dsn string) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse DSN %q: %w", redact(dsn), err)
	}
	cfg.InterpolateParams = false
	cfg.ClientFoundRows = false
	cfg.MultiStatements = false
	cfg.Logger = &mysql.NopLogger{}
	return cfg, nil
}

// DB opens a database/sql pool for dsn (see Config) without idle
// connections, for Prepare and Cleanup. Run does not use database/sql: see
// Connector.
func DB(dsn string) (*sql.DB, *mysql.Config, error) {
	cfg, err := Config(dsn)
	if err != nil {
		return nil, nil, err
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("DSN %q: %w", redact(dsn), err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxIdleConns(0)
	return db, cfg, nil
}

// Connector returns go-sql-driver's connector for dsn (see Config), whose
// connections Run's threads own directly: one connection per thread and no pool,
// so database/sql's locking, retries and per-call allocations are not on the
// path of every statement (on a 2-CPU machine shared with mysqld, client CPU is
// server throughput).
//
// With conns, connections are dialled by conns (sockets waited on in poll(2), shut down all
// at once when the run is cancelled; see dial.go), unless the DSN needs the
// driver's own dialling: a custom network, TLS, or read/write timeouts.
func Connector(dsn string, conns *Set) (driver.Connector, *mysql.Config, error) {
	cfg, err := Config(dsn)
	if err != nil {
		return nil, nil, err
	}
	switch cfg.Net {
	case "tcp", "tcp4", "tcp6", "unix":
		if conns != nil && cfg.ReadTimeout == 0 && cfg.WriteTimeout == 0 && cfg.DialFunc == nil &&
			cfg.TLS == nil && (cfg.TLSConfig == "" || cfg.TLSConfig == "false") {
			cfg.DialFunc = conns.Dial
		}
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("DSN %q: %w", redact(dsn), err)
	}
	return conn, cfg, nil
}

// redact hides the password of a DSN for messages.
func redact(dsn string) string {
	at := strings.LastIndex(dsn, "@")
	if at < 0 {
		return dsn
	}
	if colon := strings.Index(dsn[:at], ":"); colon >= 0 {
		return dsn[:colon] + ":***" + dsn[at:]
	}
	return dsn
}

// EnsureDatabase creates the DSN's database when the server says it does not
// exist (error 1049), so that Prepare works on a fresh datadir.
func EnsureDatabase(ctx context.Context, db *sql.DB, cfg *mysql.Config) error {
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

// Kill kills server connections ids, on a connection of its own
// opened with cfg (without a run's dialler), within KillTimeout. A client that
// gives up on a statement only closes its socket; the server goes on with the
// statement (a lock wait, a CREATE INDEX) until it next talks to the client.
// Best effort: errors are ignored (the server may be gone, the thread done).
func Kill(cfg *mysql.Config, ids []int64) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), KillTimeout)
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

// ServerThreads lists the ids of the server's connections of cfg's user and
// database, other than the one asking, within KillTimeout.
func ServerThreads(ctx context.Context, cfg *mysql.Config) ([]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, KillTimeout)
	defer cancel()
	c := cfg.Clone()
	c.DBName = ""
	conn, err := mysql.NewConnector(c)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ? AND DB = ? AND ID <> CONNECTION_ID()", cfg.User, cfg.DBName)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// IsConnLost reports whether err says the connection broke (as opposed to a
// server error on a healthy connection).
func IsConnLost(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ENOENT) ||
		errors.As(err, &ne)
}
