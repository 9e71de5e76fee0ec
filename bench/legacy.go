package bench

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// oltp_legacy is sysbench 0.4.12's --test=oltp, the workload most MySQL and
// MariaDB performance bug reports of its time quote numbers for. It is not
// oltp_read_write under another name: one table (sbtest, not sbtest1) whose
// index on k exists before the load, constant rows, other statement texts, an
// extra index update in every read/write event, and 0.4.12's own integer random
// ids (legacy_rand.go). What follows is re-done from sysbench 0.4.12's
// sysbench/tests/oltp/sb_oltp.c (the upstream 0.4 branch, akopytov/sysbench;
// forks that add multiple tables, partitions or NDB options are not followed);
// each piece names the function it comes from.

// legacyRowPad is the pad of every row oltp_cmd_prepare loads.
const legacyRowPad = "qqqqqqqqqqwwwwwwwwwweeeeeeeeeerrrrrrrrrrtttttttttt"

// legacyInsertPad is the pad of the row the run's INSERT puts back
// (prepare_stmt_set_trx).
const legacyInsertPad = "aaaaaaaaaaffffffffffrrrrrrrrrreeeeeeeeeeyyyyyyyyyy"

// legacyRowsPerInsert is INSERT_ROWS: rows per multi-row INSERT of the load
// (the MySQL driver has multi_rows_insert).
const legacyRowsPerInsert = 10000

// legacyEngineClause is the MySQL driver's table_options_str (drv_mysql.c,
// parse_table_engine): ENGINE in a version comment, and MAX_ROWS for MyISAM
// (--myisam-max-rows, default 1000000).
func legacyEngineClause(engine string) string {
	switch strings.ToLower(engine) {
	case "myisam":
		return "/*! ENGINE=MyISAM MAX_ROWS=1000000 */"
	case "innodb":
		return "/*! ENGINE=InnoDB */"
	case "heap":
		return "/*! ENGINE=HEAP */"
	default:
		return "/*! ENGINE=" + engine + " */"
	}
}

// legacyCreateTableSQL is oltp_cmd_prepare's CREATE TABLE with the MySQL
// driver's capabilities (unsigned_int, auto_increment, no serial): unsigned
// id and k, AUTO_INCREMENT unless --oltp-auto-inc=off. No secondary index here:
// that is the next statement. CreateTableOptions (sysbench 1.1's) is appended
// as for the other workloads.
func legacyCreateTableSQL(o *Options) string {
	id := "INTEGER UNSIGNED NOT NULL"
	if o.AutoInc {
		id += " AUTO_INCREMENT"
	}
	return strings.TrimSpace(fmt.Sprintf("CREATE TABLE %s (id %s, k integer UNSIGNED DEFAULT '0' NOT NULL, "+
		"c char(120) DEFAULT '' NOT NULL, pad char(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) %s %s",
		o.OLTPTableName, id, legacyEngineClause(o.StorageEngine), o.CreateTableOptions))
}

// legacyCreateIndexSQL is oltp_cmd_prepare's secondary index, created right
// after the table and before any row: CREATE INDEX k on sbtest(k).
func legacyCreateIndexSQL(o *Options) string {
	return "CREATE INDEX k on " + o.OLTPTableName + "(k)"
}

// legacyTableLoad is oltp_cmd_prepare: CREATE TABLE, CREATE INDEX k, then
// --oltp-table-size constant rows (k 0, c ' ', pad qqq...www...ttt) in INSERTs of
// INSERT_ROWS rows, autocommitted. With auto-increment the ids are left to the
// server (1..N with the default auto_increment_increment), as sb_oltp.c does;
// with --oltp-auto-inc=off they are given, 1..N. The rows need no random
// numbers, so they are the same for every seed.
func legacyTableLoad(o *Options) *tableLoad {
	l := &tableLoad{
		name: o.OLTPTableName,
		before: []ddl{
			{"create table", legacyCreateTableSQL(o)},
			{"create index", legacyCreateIndexSQL(o)},
		},
		rows:      o.TableSize,
		perInsert: legacyRowsPerInsert,
	}
	if o.AutoInc {
		l.prefix = "INSERT INTO " + o.OLTPTableName + "(k, c, pad) VALUES "
		l.appendRow = func(buf []byte, _ int) []byte {
			return append(buf, "(0,' ','"+legacyRowPad+"')"...)
		}
	} else {
		l.prefix = "INSERT INTO " + o.OLTPTableName + "(id, k, c, pad) VALUES "
		l.appendRow = func(buf []byte, id int) []byte {
			buf = append(buf, '(')
			buf = strconv.AppendInt(buf, int64(id), 10)
			return append(buf, ",0,' ','"+legacyRowPad+"')"...)
		}
	}
	return l
}

// legacyDropTableSQL drops the table (oltp_cmd_cleanup, with IF EXISTS as the
// other workloads' Cleanup).
func legacyDropTableSQL(o *Options) string { return "DROP TABLE IF EXISTS " + o.OLTPTableName }

// legacyStmt is one statement of prepare_stmt_set_trx, named after its field
// of oltp_stmt_set_t; each thread prepares all of them on its connection,
// whatever the mode (sb_oltp.c does), in this order.
type legacyStmt int

const (
	lgPoint legacyStmt = iota
	lgRange
	lgRangeSum
	lgRangeOrder
	lgRangeDistinct
	lgUpdateIndex
	lgUpdateNonIndex
	lgDelete
	lgInsert
	numLegacyStmts
)

// legacyCatalogue holds prepare_stmt_set_trx's statements, with %s for
// --oltp-table-name, and whether each returns a result set.
var legacyCatalogue = [numLegacyStmts]struct {
	name  string
	sql   string
	query bool
}{
	lgPoint:          {"point", "SELECT c from %s where id=?", true},
	lgRange:          {"range", "SELECT c from %s where id between ? and ?", true},
	lgRangeSum:       {"range_sum", "SELECT SUM(K) from %s where id between ? and ?", true},
	lgRangeOrder:     {"range_order", "SELECT c from %s where id between ? and ? order by c", true},
	lgRangeDistinct:  {"range_distinct", "SELECT DISTINCT c from %s where id between ? and ? order by c", true},
	lgUpdateIndex:    {"update_index", "UPDATE %s set k=k+1 where id=?", false},
	lgUpdateNonIndex: {"update_non_index", "UPDATE %s set c=? where id=?", false},
	lgDelete:         {"delete", "DELETE from %s where id=?", false},
	lgInsert:         {"insert", "INSERT INTO %s values(?,0,' ','" + legacyInsertPad + "')", false},
}

func (k legacyStmt) String() string { return legacyCatalogue[k].name }

// sql returns the statement's text for table.
func (k legacyStmt) sql(table string) string { return fmt.Sprintf(legacyCatalogue[k].sql, table) }

// legacyThread is a thread's oltp_legacy state: its distribution and the
// request being built. Its statements are its session's (openSession).
type legacyThread struct {
	dist legacyDist
	reqs []legacyReq
	c    []byte // the c value of a non-index update
}

// legacyReq is one query of a request (sb_sql_query_t): a statement and its id,
// or its range [from, to].
type legacyReq struct {
	k        legacyStmt
	from, to uint32
}

// legacyEvent runs one event of oltp_legacy: get_request_complex or
// get_request_simple, then oltp_execute_request.
func (t *thread) legacyEvent(ctx context.Context, c *counts) error {
	if t.lg == nil {
		t.lg = &legacyThread{dist: newLegacyDist(t.o)}
	}
	if t.o.OLTPTestMode == "simple" {
		// get_request_simple: one point select, no BEGIN/COMMIT.
		return t.legacyExec(ctx, legacyReq{k: lgPoint, from: t.lg.dist.id(t.rnd)}, c)
	}
	reqs := t.legacyComplex()
	if !t.o.SkipTrx {
		if err := t.sess.transaction(ctx, true, c); err != nil {
			return err
		}
	}
	for _, q := range reqs {
		if err := t.legacyExec(ctx, q, c); err != nil {
			return err
		}
	}
	if !t.o.SkipTrx {
		return t.sess.transaction(ctx, false, c)
	}
	return nil
}

// legacyComplex is get_request_complex: every id of the event is drawn before
// the first statement runs, in statement order (only the c of a non-index update
// is drawn when it runs, in get_sql_statement_trx).
func (t *thread) legacyComplex() []legacyReq {
	o, lg := t.o, t.lg
	reqs := lg.reqs[:0]
	for range o.PointSelects {
		reqs = append(reqs, legacyReq{k: lgPoint, from: lg.dist.id(t.rnd)})
	}
	if o.RangeSelects { // not a 0.4.12 option: sysbench 1.0's --range-selects=off
		size := uint32(o.RangeSize)
		ranges := []struct {
			k    legacyStmt
			n    int
			last uint32 // to = from + size - last
		}{
			{lgRange, o.SimpleRanges, 1},
			{lgRangeSum, o.SumRanges, 1},
			{lgRangeOrder, o.OrderRanges, 1},
			// The distinct range ends at from + range_size: one row more.
			{lgRangeDistinct, o.DistinctRanges, 0},
		}
		for _, r := range ranges {
			for range r.n {
				from := lg.rangeStart(t.rnd, size)
				reqs = append(reqs, legacyReq{k: r.k, from: from, to: from + size - r.last})
			}
		}
	}
	if !o.OLTPReadOnly {
		for range o.IndexUpdates {
			reqs = append(reqs, legacyReq{k: lgUpdateIndex, from: lg.dist.id(t.rnd)})
		}
		for range o.NonIndexUpdates {
			reqs = append(reqs, legacyReq{k: lgUpdateNonIndex, from: lg.dist.id(t.rnd)})
		}
		// One more index update ("to make PostgreSQL work"), then DELETE and
		// INSERT, all of the same id.
		id := lg.dist.id(t.rnd)
		reqs = append(reqs, legacyReq{k: lgUpdateIndex, from: id},
			legacyReq{k: lgDelete, from: id}, legacyReq{k: lgInsert, from: id})
	}
	lg.reqs = reqs
	return reqs
}

// rangeStart draws the first id of a range as get_request_complex does: pulled
// back to end at the last row, and to at least 1. In unsigned arithmetic, so a
// range larger than the table starts at table_size - range_size modulo 2^32,
// which the driver binds as a negative INT (the range then covers ids 1 to
// table_size - 1).
func (lg *legacyThread) rangeStart(r *Rand, size uint32) uint32 {
	from := lg.dist.id(r)
	if from+size > lg.dist.size {
		from = lg.dist.size - size
	}
	if from < 1 {
		from = 1
	}
	return from
}

// legacyExec runs one query of a request (get_sql_statement_trx binds it) and
// counts it: a read for a result set, a write for DML that changed a row, other
// for DML that did not (the package's rule; 0.4.12 counts every DML a write).
// Ids are unsigned in sb_oltp.c and bound as a signed INT (DB_TYPE_INT).
func (t *thread) legacyExec(ctx context.Context, q legacyReq, c *counts) error {
	s, lg := t.sess, t.lg
	var args []driver.Value
	switch q.k {
	case lgPoint, lgUpdateIndex, lgDelete, lgInsert:
		args = []driver.Value{int64(int32(q.from))}
	case lgUpdateNonIndex:
		args = []driver.Value{lg.cValue(t.rnd), int64(int32(q.from))}
	default:
		args = []driver.Value{int64(int32(q.from)), int64(int32(q.to))}
	}
	st := s.legacy[q.k]
	var err error
	began := s.clockStart()
	if legacyCatalogue[q.k].query {
		if err = s.queryStmt(ctx, st, args); err == nil {
			c.reads++
		}
	} else {
		var res driver.Result
		if res, err = st.(driver.StmtExecContext).ExecContext(ctx, s.bind(args)); err == nil {
			var n int64
			if n, err = res.RowsAffected(); n > 0 {
				c.writes++
			} else if err == nil {
				c.other++
			}
		}
	}
	if err != nil {
		return &StatementError{Thread: t.id, Statement: q.k.String(), SQL: q.k.sql(t.o.OLTPTableName), Args: anys(args), Err: err}
	}
	if s.clock != nil {
		s.timed(time.Since(began), q.k.String(), q.k.sql(t.o.OLTPTableName), args)
	}
	return nil
}

// cValue is the c of a non-index update (get_sql_statement_trx): ten sb_rnd()
// numbers joined by '-'.
func (lg *legacyThread) cValue(r *Rand) string {
	b := lg.c[:0]
	for i := range 10 {
		if i > 0 {
			b = append(b, '-')
		}
		b = strconv.AppendUint(b, uint64(r.sbRnd()), 10)
	}
	lg.c = b
	return string(b)
}
