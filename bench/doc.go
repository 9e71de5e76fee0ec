// Package bench is perfbisect's workloads, every one a Workload (driver.go)
// made once from the settings, and the built-in engine that runs most of
// them: sysbench's OLTP workloads (OLTP), TPC-C (TPCC, tpcc.go) and a SQL
// workload file (SQLWorkload: sqlfile.go reads it, sqlworkload.go runs it).
// WorkloadKind tells which kind a --workload value names. Its folders hold
// the other two jobs: bench/sysbench is real sysbench (the command line
// with its 0.4 compatibility, running sysbench and reading its report, any
// sysbench Lua script as a Workload, and the OLTP workloads run by sysbench),
// and bench/dial the connection plumbing. Options are set by sysbench's own
// option names (Options.Set, optionset.go), which the engine honours.
//
// The built-in OLTP workload is sysbench 1.0's oltp_*.lua scripts re-done in
// Go over github.com/go-sql-driver/mysql, so that a bisection does not depend
// on a sysbench binary and every revision gets exactly the same rows and the
// same stream of statements.
//
// The package is laid out like sysbench's Lua workloads. One catalogue holds the
// schema and the statements (schema.go, the part of oltp_common.lua that defines
// tables and stmt_defs); each workload is a short list of statement groups taken
// from it (workload.go, the oltp_read_only.lua ... oltp_delete.lua files). The
// random numbers are sysbench's own: xoroshiro128+ and the uniform, gaussian,
// special, pareto and zipfian distributions of sb_rand.c (rand.go, distribution.go).
// oltp_legacy is sysbench 0.4.12's --test=oltp (sb_oltp.c): one table, its own
// rows, statements and distributions (legacy.go, legacy_rand.go); ParseArgs maps
// 0.4 command lines to it (sysbench.ParseArgs).
//
// The life of a measurement is Prepare (create and load sbtest1..N from a fixed
// seed, secondary index after the load), Run (one connection per thread, prepared
// statements, warm-up, a measured window bracketed by Hooks, latency histogram and
// per-second series) and Cleanup. Result follows sysbench's counting rules and
// Result.WriteText prints a report in sysbench's layout.
//
// The client costs the server as little CPU as it can, since on a small machine
// they share the cores: each thread owns a go-sql-driver connection (no
// database/sql), waits for replies in poll(2) like libmysqlclient but without its
// failed read before each wait (package dial), drains result sets without
// converting rows, and buffers completed events per thread (collect.go).
// sysbench.Run runs real sysbench with the same options and reads its report
// into the same Result.
//
// bench knows a server only through a go-sql-driver DSN; it never starts, stops or
// inspects mysqld. When a connection is lost and cannot be re-established, Run
// returns an error wrapping ErrConnectionLost, and the caller decides whether the
// server died.
package bench
