package bench

import (
	"maps"
	"slices"
)

// A workload is one sysbench script: whether its event is a transaction, and the
// statement groups it runs in order. Each group is one execute_* function of
// oltp_common.lua: pick a table uniformly, then run its statement count times.
type workload struct {
	trx    bool    // BEGIN ... COMMIT around the event, unless Options.SkipTrx
	groups []group // in event order
	// emptyWithoutAutoInc: prepare creates empty tables when AutoInc is off
	// (oltp_insert, whose unique ids could collide with loaded ones).
	emptyWithoutAutoInc bool
	// legacy: sysbench 0.4.12's oltp (legacy.go), which has no groups: its
	// table, rows, statements and events are its own.
	legacy bool
}

// group is a statement group of an event.
type group struct {
	op          groupOp
	kind        stmtKind             // the statement for point, range and update groups
	count       func(o *Options) int // statements (pairs for delete_inserts) per event
	rangeSelect bool                 // skipped, and not prepared, when RangeSelects is off
	kinds       func() []stmtKind    // statements the group needs prepared; nil = {kind}
}

// groupOp says how a group draws its values and runs its statements.
type groupOp int

const (
	opSelectPoint    groupOp = iota // kind(id)
	opSelectRange                   // kind(id, id+range_size-1)
	opUpdateIndex                   // kind(id)
	opUpdateNonIndex                // kind(c, id)
	opDeleteInsert                  // DELETE id; INSERT (id, k, c, pad)
	opDeleteOnly                    // DELETE id (oltp_delete)
	opInsertOnly                    // INSERT (0 or unique id, k, c, pad) (oltp_insert)
)

// The groups of the catalogue.
var (
	pointSelects = group{op: opSelectPoint, kind: stmtPointSelect,
		count: func(o *Options) int { return o.PointSelects }}
	onePointSelect = group{op: opSelectPoint, kind: stmtPointSelect,
		count: func(*Options) int { return 1 }}
	simpleRanges = group{op: opSelectRange, kind: stmtSimpleRange, rangeSelect: true,
		count: func(o *Options) int { return o.SimpleRanges }}
	sumRanges = group{op: opSelectRange, kind: stmtSumRange, rangeSelect: true,
		count: func(o *Options) int { return o.SumRanges }}
	orderRanges = group{op: opSelectRange, kind: stmtOrderRange, rangeSelect: true,
		count: func(o *Options) int { return o.OrderRanges }}
	distinctRanges = group{op: opSelectRange, kind: stmtDistinctRange, rangeSelect: true,
		count: func(o *Options) int { return o.DistinctRanges }}
	indexUpdates = group{op: opUpdateIndex, kind: stmtIndexUpdate,
		count: func(o *Options) int { return o.IndexUpdates }}
	nonIndexUpdates = group{op: opUpdateNonIndex, kind: stmtNonIndexUpdate,
		count: func(o *Options) int { return o.NonIndexUpdates }}
	deleteInserts = group{op: opDeleteInsert,
		count: func(o *Options) int { return o.DeleteInserts },
		kinds: func() []stmtKind { return []stmtKind{stmtDelete, stmtInsert} }}
	oneDelete = group{op: opDeleteOnly, kind: stmtDelete,
		count: func(*Options) int { return 1 }}
	oneInsert = group{op: opInsertOnly, kind: stmtInsert,
		count: func(*Options) int { return 1 }}
)

// workloads are sysbench 1.0.20's oltp_*.lua scripts, and 0.4.12's --test=oltp.
var workloads = map[string]workload{
	"oltp_read_only": {trx: true, groups: []group{
		pointSelects, simpleRanges, sumRanges, orderRanges, distinctRanges}},
	"oltp_read_write": {trx: true, groups: []group{
		pointSelects, simpleRanges, sumRanges, orderRanges, distinctRanges,
		indexUpdates, nonIndexUpdates, deleteInserts}},
	"oltp_write_only": {trx: true, groups: []group{
		indexUpdates, nonIndexUpdates, deleteInserts}},
	"oltp_point_select":     {groups: []group{onePointSelect}},
	"oltp_update_index":     {groups: []group{indexUpdates}},
	"oltp_update_non_index": {groups: []group{nonIndexUpdates}},
	"oltp_insert":           {groups: []group{oneInsert}, emptyWithoutAutoInc: true},
	"oltp_delete":           {groups: []group{oneDelete}},
	// BEGIN and COMMIT are prepared unless SkipTrx, also in simple mode, which
	// does not run them (prepare_stmt_set_trx prepares them for both modes).
	"oltp_legacy": {trx: true, legacy: true},
}

// RowsPerTable returns how many rows Prepare loads into each table for o:
// TableSize, or 0 for oltp_insert without AutoInc (its ids come from sysbench's
// unique sequence and could collide with loaded ones).
func RowsPerTable(o Options) int {
	if workloads[o.Workload].emptyWithoutAutoInc && !o.AutoInc {
		return 0
	}
	return o.TableSize
}

// Workloads lists the accepted values of Options.Workload, sorted.
func Workloads() []string {
	return slices.Sorted(maps.Keys(workloads))
}

// activeGroups returns the groups an event of o runs: all of the workload's, less
// the range selects when RangeSelects is off.
func (w workload) activeGroups(o *Options) []group {
	var gs []group
	for _, g := range w.groups {
		if g.rangeSelect && !o.RangeSelects {
			continue
		}
		gs = append(gs, g)
	}
	return gs
}

// stmtKinds returns the distinct statements the active groups need, in order.
func (w workload) stmtKinds(o *Options) []stmtKind {
	var ks []stmtKind
	for _, g := range w.activeGroups(o) {
		need := []stmtKind{g.kind}
		if g.kinds != nil {
			need = g.kinds()
		}
		for _, k := range need {
			if !slices.Contains(ks, k) {
				ks = append(ks, k)
			}
		}
	}
	return ks
}
