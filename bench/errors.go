package bench

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/perfbisect/perfbisect/bench/dial"
)

// ErrConnectionLost is wrapped by the error Run returns when a thread lost its
// connection and could not open a new one within a bounded number of tries. The
// usual cause is a server that died; the caller checks whether mysqld is alive.
var ErrConnectionLost = errors.New("connection to the server lost")

// StatementError is a statement that failed: which thread, which statement of the
// catalogue (sysbench's name, such as "point_selects", or "BEGIN"), its text and
// arguments, and the driver's error (a *mysql.MySQLError carries the server's
// number and message).
type StatementError struct {
	Thread    int    // 0-based thread number
	Statement string // catalogue name, or the plain statement
	SQL       string // text as prepared or sent
	Args      []any  // arguments of the execution; nil for prepare and plain statements
	Prepare   bool   // the error came from preparing, not executing
	Err       error
}

// Error says "thread N: [prepare ]name (SQL with [args]): driver error".
func (e *StatementError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "thread %d: ", e.Thread)
	if e.Prepare {
		b.WriteString("prepare ")
	}
	fmt.Fprintf(&b, "%s (%s", e.Statement, e.SQL)
	if len(e.Args) > 0 {
		fmt.Fprintf(&b, " with %v", shortArgs(e.Args))
	}
	fmt.Fprintf(&b, "): %v", e.Err)
	return b.String()
}

// Unwrap returns the driver's error (errors.As finds *mysql.MySQLError in it).
func (e *StatementError) Unwrap() error { return e.Err }

// shortArgs keeps long string arguments (c, pad) readable in messages.
func shortArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if s, ok := a.(string); ok && len(s) > 23 {
			a = s[:23] + "..."
		}
		out[i] = a
	}
	return out
}

// errClass is what a worker does about an error.
type errClass int

const (
	errFatal     errClass = iota // stop the run
	errIgnorable                 // roll back, count, retry the event (IgnoreErrors)
	errLost                      // reconnect, count, retry the event
)

// Server error numbers that mean the connection is gone.
var lostConnCodes = []uint16{
	1053, // ER_SERVER_SHUTDOWN
	1927, // ER_CONNECTION_KILLED (MariaDB)
	2006, // CR_SERVER_GONE_ERROR
	2013, // CR_SERVER_LOST
	2055, // CR_SERVER_LOST_EXTENDED
	4031, // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8.0.24+)
}

// classify sorts err for a worker and returns the server error number if any.
// A lost connection wins over IgnoreErrors (listing 2013 there, as sysbench users
// do to get reconnects, reconnects).
func classify(err error, o *Options) (errClass, uint16) {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		for _, c := range lostConnCodes {
			if me.Number == c {
				return errLost, me.Number
			}
		}
		if o.ignores(me.Number) {
			return errIgnorable, me.Number
		}
		return errFatal, me.Number
	}
	if dial.IsConnLost(err) {
		return errLost, 0
	}
	return errFatal, 0
}
