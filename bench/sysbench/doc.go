// Package sysbench is real sysbench 1.0 for perfbisect: its command line
// (ParseArgs, with the 0.4.12 names bug reports quote translated, and
// ParseCustomArgs for a script's or a SQL workload file's own options), the
// binary run with bench.Options (Run, Args, Supports) and its report read
// into a bench.Result (ParseReport), and two kinds of bench.Workload it
// runs: the OLTP workloads by sysbench's own scripts (OLTP) and any sysbench
// Lua script (Script), whose files and sysbench's version are its identity.
//
// A sysbench that fails against a live server is an *Error (the revision's
// problem unless the script itself failed: ErrScriptFailed); a missing
// binary wraps ErrNoSysbench (the machine's).
package sysbench
