package bench

import "fmt"

// SetBeginSQL makes the workloads send q in place of BEGIN until the returned
// function restores it: a statement a current server refuses to prepare
// stands in for an old server's refused BEGIN.
func SetBeginSQL(q string) (restore func()) {
	old := sqlBegin
	sqlBegin = q
	return func() { sqlBegin = old }
}

// legacyStatementNames lists the statements in preparation order.
func legacyStatementNames() []string {
	names := make([]string, numLegacyStmts)
	for k := range numLegacyStmts {
		names[k] = k.String()
	}
	return names
}

// legacyStatementsPerEvent counts the statements of one event of o as
// get_request_complex and get_request_simple build it, every DML a write (as
// 0.4.12 counts them, and as StatementsPerEvent assumes).
func legacyStatementsPerEvent(o *Options) (reads, writes, other int) {
	if o.OLTPTestMode == "simple" {
		return 1, 0, 0
	}
	reads = o.PointSelects
	if o.RangeSelects {
		reads += o.SimpleRanges + o.SumRanges + o.OrderRanges + o.DistinctRanges
	}
	if !o.OLTPReadOnly {
		writes = o.IndexUpdates + o.NonIndexUpdates + 3 // + UPDATE, DELETE, INSERT of one id
	}
	if !o.SkipTrx {
		other = 2
	}
	return reads, writes, other
}

// IndexName returns the name of table n's secondary index on k: k_1, k_2, ...
func IndexName(n int) string { return fmt.Sprintf("k_%d", n) }

// StatementKinds returns the names (sysbench's stmt_defs keys, such as
// "point_selects") of the statements workload prepares with o, in preparation
// order. Each thread prepares each of them once per table, and BEGIN and COMMIT
// once when the event is a transaction (as oltp_common.lua), so a run prepares
// (len(StatementKinds) x Tables + 2) x Threads statements, or without the 2
// (plus that many again per reconnect). It returns nil for an unknown workload.
//
// oltp_legacy's names are the fields of sb_oltp.c's statement set ("point",
// "range", ... "insert"); its threads prepare all nine in either mode, and BEGIN
// and COMMIT unless SkipTrx, as sysbench 0.4.12 does.
func StatementKinds(o Options) []string {
	w, ok := workloads[o.Workload]
	if !ok {
		return nil
	}
	if w.legacy {
		return legacyStatementNames()
	}
	var names []string
	for _, k := range w.stmtKinds(&o) {
		names = append(names, k.String())
	}
	return names
}

// StatementsPerEvent returns how many statements of each class one event of o
// runs when nothing fails: reads (result sets), writes (row-changing DML, assuming
// every DML changes a row) and other (BEGIN and COMMIT). oltp_delete's DELETE
// counts as a write here though it is "other" when the id is already gone.
// oltp_legacy's complex event writes IndexUpdates + NonIndexUpdates + 3 (an
// extra index update, DELETE and INSERT of one id), whatever DeleteInserts says.
func StatementsPerEvent(o Options) (reads, writes, other int) {
	w, ok := workloads[o.Workload]
	if !ok {
		return 0, 0, 0
	}
	if w.legacy {
		return legacyStatementsPerEvent(&o)
	}
	for _, g := range w.activeGroups(&o) {
		n := g.count(&o)
		switch g.op {
		case opSelectPoint, opSelectRange:
			reads += n
		case opDeleteInsert:
			writes += 2 * n
		default:
			writes += n
		}
	}
	if w.trx && !o.SkipTrx {
		other = 2
	}
	return reads, writes, other
}
