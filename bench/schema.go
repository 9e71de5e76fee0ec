package bench

import (
	"fmt"
	"strings"
)

// The catalogue: sysbench's tables and statements (oltp_common.lua's
// create_table and stmt_defs). Workloads (workload.go) pick from it.

// Templates of the c and pad columns: groups of 11 random digits joined by '-'.
const (
	cTemplate   = "###########-###########-###########-###########-###########-###########-###########-###########-###########-###########" // 10 groups, 119 characters
	padTemplate = "###########-###########-###########-###########-###########"                                                             // 5 groups, 59 characters
)

// TableName returns the name of table n (1-based): sbtest1, sbtest2, ...
func TableName(n int) string { return fmt.Sprintf("sbtest%d", n) }

// createTableSQL is sysbench's CREATE TABLE for table n: no secondary index (that
// comes after the load), the engine in a MySQL-only comment as sysbench writes it.
func createTableSQL(o *Options, n int) string {
	id := "INTEGER NOT NULL AUTO_INCREMENT"
	if !o.AutoInc {
		id = "INTEGER NOT NULL"
	}
	return strings.TrimSpace(fmt.Sprintf(`CREATE TABLE %s(
  id %s,
  k INTEGER DEFAULT '0' NOT NULL,
  c CHAR(120) DEFAULT '' NOT NULL,
  pad CHAR(60) DEFAULT '' NOT NULL,
  PRIMARY KEY (id)
) /*! ENGINE = %s */ %s`, TableName(n), id, o.StorageEngine, o.CreateTableOptions))
}

// createIndexSQL adds the secondary index k_n on k, after the load.
func createIndexSQL(n int) string {
	return fmt.Sprintf("CREATE INDEX k_%d ON %s(k)", n, TableName(n))
}

func dropTableSQL(n int) string { return "DROP TABLE IF EXISTS " + TableName(n) }

// bulkInsertPrefix starts a multi-row INSERT into table n. Ids are always given
// explicitly so that the rows do not depend on auto_increment_increment/offset.
func bulkInsertPrefix(n int) string {
	return "INSERT INTO " + TableName(n) + "(id, k, c, pad) VALUES"
}

// stmtKind is one prepared statement of the catalogue (a key of sysbench's
// stmt_defs). Every thread prepares each kind its workload uses once per table.
type stmtKind int

const (
	stmtPointSelect stmtKind = iota
	stmtSimpleRange
	stmtSumRange
	stmtOrderRange
	stmtDistinctRange
	stmtIndexUpdate
	stmtNonIndexUpdate
	stmtDelete
	stmtInsert
	numStmtKinds
)

// catalogue holds the name (sysbench's) and text (with %d for the table number)
// of each statement, and whether it returns a result set.
var catalogue = [numStmtKinds]struct {
	name  string
	sql   string
	query bool // returns a result set: counted as a read
}{
	stmtPointSelect:    {"point_selects", "SELECT c FROM sbtest%d WHERE id=?", true},
	stmtSimpleRange:    {"simple_ranges", "SELECT c FROM sbtest%d WHERE id BETWEEN ? AND ?", true},
	stmtSumRange:       {"sum_ranges", "SELECT SUM(k) FROM sbtest%d WHERE id BETWEEN ? AND ?", true},
	stmtOrderRange:     {"order_ranges", "SELECT c FROM sbtest%d WHERE id BETWEEN ? AND ? ORDER BY c", true},
	stmtDistinctRange:  {"distinct_ranges", "SELECT DISTINCT c FROM sbtest%d WHERE id BETWEEN ? AND ? ORDER BY c", true},
	stmtIndexUpdate:    {"index_updates", "UPDATE sbtest%d SET k=k+1 WHERE id=?", false},
	stmtNonIndexUpdate: {"non_index_updates", "UPDATE sbtest%d SET c=? WHERE id=?", false},
	stmtDelete:         {"deletes", "DELETE FROM sbtest%d WHERE id=?", false},
	stmtInsert:         {"inserts", "INSERT INTO sbtest%d (id, k, c, pad) VALUES (?, ?, ?, ?)", false},
}

func (k stmtKind) String() string { return catalogue[k].name }

// sql returns the statement's text for table n.
func (k stmtKind) sql(n int) string { return fmt.Sprintf(catalogue[k].sql, n) }

// sqlBegin and sqlCommit are prepared, as sysbench 1.0 prepares them; a
// server that refuses to prepare one (BEGIN on MariaDB 10.0, MySQL 5.x) gets
// it as text (textStmt). sqlBegin is a variable so that a test can make a
// current server refuse it. sqlRollback is always sent as text.
var sqlBegin = "BEGIN"

const (
	sqlCommit   = "COMMIT"
	sqlRollback = "ROLLBACK"
)
