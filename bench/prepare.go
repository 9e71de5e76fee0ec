package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"
	"github.com/perfbisect/perfbisect/bench/dial"
)

// bulkInsertBytes bounds one multi-row INSERT of the load, as sysbench's bulk
// insert buffer does (512 KiB: about 2,700 rows of sbtest).
const bulkInsertBytes = 512 << 10

// Prepare creates and loads tables sbtest1..sbtestN for o, like sysbench's
// prepare command: CREATE TABLE without secondary index, multi-row INSERTs of a
// few thousand rows each (autocommit), then CREATE INDEX k_N ON sbtestN(k). Up to
// o.Threads tables load at once, on their own connections. The rows come from
// o.RandSeed, table by table, so the same seed gives the same rows whatever the
// thread count: id 1..TableSize, k from o.RandType over [1, TableSize], c and pad
// random digit groups. oltp_insert with AutoInc off gets empty tables.
//
// For oltp_legacy it is sysbench 0.4.12's prepare instead: table
// o.OLTPTableName (sbtest), its index k created before the load, and TableSize
// constant rows (k 0, c ' ', a fixed pad) in INSERTs of 10000 rows.
//
// The DSN's database is created if the server says it does not exist. A table that
// already exists is an error (run Cleanup first). Cancelling ctx stops the load.
func Prepare(ctx context.Context, dsn string, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	db, cfg, err := dial.DB(dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := dial.EnsureDatabase(ctx, db, cfg); err != nil {
		return fmt.Errorf("prepare: database %q: %w", cfg.DBName, err)
	}
	rows := RowsPerTable(o)
	seed := o.seed()
	err = loadTables(ctx, db, cfg, o.Tables, o.Threads, func(n int) *tableLoad { return newTableLoad(&o, seed, n, rows) })
	if err != nil {
		return fmt.Errorf("prepare %s: %w", o.Workload, err)
	}
	return nil
}

// loadTables runs the loads of tables 1..n (load(k) is table k's), up to
// threads at once, each on a connection of its own. A loader that fails
// stops the others between statements, not in the middle of one: a
// statement the client gave up on would go on in the server (a CREATE
// TABLE could land after a Cleanup). Cancelling ctx interrupts at once; the
// server threads of interrupted loaders are then killed.
func loadTables(ctx context.Context, db *sql.DB, cfg *mysql.Config, n, threads int, load func(k int) *tableLoad) error {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		failed   atomic.Bool
		open     = map[int]int64{} // loader -> server connection id, while loading
	)
	loaders := max(1, min(threads, n))
	for l := range loaders {
		wg.Go(func() {
			// Loader l takes tables l+1, l+1+loaders, ... as sysbench's threads do.
			for k := l + 1; k <= n && !failed.Load(); k += loaders {
				err := loadTable(ctx, db, load(k), failed.Load, func(id int64) {
					mu.Lock()
					open[l] = id
					mu.Unlock()
				})
				mu.Lock()
				if err == nil || ctx.Err() == nil {
					delete(open, l) // finished, or failed with the server's answer
				}
				if err != nil && firstErr == nil {
					firstErr = err
					failed.Store(true)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		dial.Kill(cfg, slices.Collect(maps.Values(open)))
		return ctx.Err()
	}
	return firstErr
}

// tableLoad is what loadTable sends for one table: statements before the rows,
// the rows as multi-row INSERTs (autocommit), statements after.
type tableLoad struct {
	name          string // the table, for messages
	before, after []ddl
	prefix        string // "INSERT INTO t(...) VALUES", followed by the rows
	rows          int    // ids 1..rows
	perInsert     int    // rows per INSERT; 0: up to bulkInsertBytes
	// appendRow appends "(...)", the values of row id.
	appendRow func(buf []byte, id int) []byte
}

// ddl is a statement of a load other than its INSERTs.
type ddl struct{ what, sql string }

// newTableLoad returns the load of table n of o: sysbench 1.0's (CREATE TABLE,
// the rows from seed, CREATE INDEX) or oltp_legacy's (see legacyTableLoad).
func newTableLoad(o *Options, seed int64, n, rows int) *tableLoad {
	if workloads[o.Workload].legacy {
		return legacyTableLoad(o)
	}
	return &tableLoad{
		name:      TableName(n),
		before:    []ddl{{"create table", createTableSQL(o, n)}},
		after:     []ddl{{"create index", createIndexSQL(n)}},
		prefix:    bulkInsertPrefix(n),
		rows:      rows,
		appendRow: newRowGen(o, seed, n).appendRow,
	}
}

// full reports whether an INSERT holding rows rows in buf is complete.
func (l *tableLoad) full(buf []byte, rows int) bool {
	if l.perInsert > 0 {
		return rows >= l.perInsert
	}
	return len(buf) >= bulkInsertBytes
}

// loadTable runs load l on one connection. It reports the connection's server
// id to opened, and stops before a statement when stop says so.
func loadTable(ctx context.Context, db *sql.DB, l *tableLoad, stop func() bool, opened func(id int64)) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("%s: connect: %w", l.name, err)
	}
	defer conn.Close()
	var id int64
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		return fmt.Errorf("%s: connect: %w", l.name, err)
	}
	opened(id)
	errStopped := errors.New("stopped")
	exec := func(what, q string) error {
		if stop() {
			return errStopped
		}
		if _, err := conn.ExecContext(ctx, q); err != nil {
			if len(q) > 200 {
				q = q[:200] + "..."
			}
			return fmt.Errorf("%s: %s (%s): %w", l.name, what, q, err)
		}
		return nil
	}
	for _, d := range l.before {
		if err := exec(d.what, d.sql); err != nil {
			return err
		}
	}
	buf := make([]byte, 0, bulkInsertBytes+1024)
	for id := 1; id <= l.rows; {
		buf = append(buf[:0], l.prefix...)
		for n := 0; id <= l.rows && !l.full(buf, n); id, n = id+1, n+1 {
			if n > 0 {
				buf = append(buf, ',')
			}
			buf = l.appendRow(buf, id)
		}
		if err := exec("insert", string(buf)); err != nil {
			return err
		}
	}
	for _, d := range l.after {
		if err := exec(d.what, d.sql); err != nil {
			return err
		}
	}
	return nil
}

// rowGen draws the rows of one table: for each row c, then pad, then k, in
// sysbench's order.
type rowGen struct {
	r    *Rand
	size uint32
}

func newRowGen(o *Options, seed int64, table int) *rowGen {
	return &rowGen{r: NewRand(*o, seed, streamPrepare+uint64(table)), size: uint32(o.TableSize)}
}

// appendRow appends "(id, k, 'c', 'pad')" for row id.
func (g *rowGen) appendRow(buf []byte, id int) []byte {
	c := g.r.String(cTemplate)
	pad := g.r.String(padTemplate)
	k := g.r.Default(1, g.size)
	buf = append(buf, '(')
	buf = strconv.AppendInt(buf, int64(id), 10)
	buf = append(buf, ", "...)
	buf = strconv.AppendUint(buf, uint64(k), 10)
	buf = append(buf, ", '"...)
	buf = append(buf, c...)
	buf = append(buf, "', '"...)
	buf = append(buf, pad...)
	return append(buf, "')"...)
}

// Cleanup drops tables sbtest1..sbtestN (DROP TABLE IF EXISTS, like sysbench's
// cleanup command), or for oltp_legacy the table o.OLTPTableName. The database
// itself is kept.
func Cleanup(ctx context.Context, dsn string, o Options) error {
	var drops []string
	if workloads[o.Workload].legacy {
		if !tableName.MatchString(o.OLTPTableName) {
			return fmt.Errorf("cleanup: %w: --oltp-table-name=%q: must be a plain table name such as sbtest", ErrInvalidOption, o.OLTPTableName)
		}
		drops = append(drops, legacyDropTableSQL(&o))
	} else {
		if o.Tables < 1 {
			return fmt.Errorf("cleanup: %w: --tables=%d: must be >= 1", ErrInvalidOption, o.Tables)
		}
		for n := 1; n <= o.Tables; n++ {
			drops = append(drops, dropTableSQL(n))
		}
	}
	db, _, err := dial.DB(dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range drops {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("cleanup: %s: %w", q, err)
		}
	}
	return nil
}
