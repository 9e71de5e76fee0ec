package bench

import "strings"

// The kinds of workload a --workload value names (WorkloadKind).
const (
	KindOLTP   = "oltp"   // one of Workloads(), by the built-in engine or sysbench
	KindScript = "script" // a sysbench Lua script (sysbench.Script)
	KindSQL    = "sql"    // a SQL workload file (SQLWorkload)
	KindTPCC   = "tpcc"   // TPC-C, built in (TPCC)
)

// WorkloadKind says which kind of workload word names: KindOLTP for one of
// Workloads(); KindScript for a path ending in .lua or a name that is
// neither (a script sysbench finds: select_random_ranges); KindSQL for a
// path that does not end in .lua (it has a /) or a name ending in .sql;
// KindTPCC for tpcc.
func WorkloadKind(word string) string {
	switch {
	case word == "tpcc":
		return KindTPCC
	case strings.HasSuffix(word, ".lua"):
		return KindScript
	case strings.Contains(word, "/") || strings.HasSuffix(word, ".sql"):
		return KindSQL
	}
	if _, ok := workloads[word]; ok {
		return KindOLTP
	}
	return KindScript
}
