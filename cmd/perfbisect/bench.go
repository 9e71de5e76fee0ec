package main

import (
	"fmt"
	"os"

	"github.com/perfbisect/perfbisect/internal/app"
	"github.com/urfave/cli/v2"
)

// perfbisect bench: the workload on its own, against any server, with
// sysbench's command line.

const benchUsage = `perfbisect bench [perfbisect options] [sysbench options] WORKLOAD prepare|run|cleanup

   The built-in workload (or real sysbench with --driver sysbench) against a server you name,
   with sysbench 1.0's command line; 0.4 command lines from old reports are accepted and
   translated with a note. Examples:

     perfbisect bench oltp_read_only --mysql-socket=/run/mysqld/mysqld.sock --mysql-user=root \
         --tables=4 --table-size=100000 prepare
     perfbisect bench oltp_read_only --mysql-socket=/run/mysqld/mysqld.sock --mysql-user=root \
         --tables=4 --table-size=100000 --threads=8 --time=60 --warmup-time=10 --report-interval=1 run
     perfbisect bench --test=oltp --oltp-read-only=on --oltp-table-size=100000 --num-threads=16 \
         --max-time=60 --mysql-host=db1 --mysql-user=sbtest run

   WORKLOAD may also be tpcc (TPC-C, built in: --warehouses=N), a SQL workload file (a path:
   docs/workloads/join.sql; its variables as options: --span=50), or a sysbench Lua script (a
   path ending in .lua, or a name sysbench finds: select_random_ranges), which real sysbench
   runs; the options after it that are not the connection's, --threads, --time, --warmup-time,
   --rand-seed, --percentile or --report-interval are its own:

     perfbisect bench tpcc --warehouses=1 --mysql-socket=/run/mysqld/mysqld.sock --threads=8 prepare
     perfbisect bench ~/sysbench-tpcc/tpcc.lua --scale=1 --tables=1 --mysql-socket=... --time=60 run

   Connection (sysbench's names and defaults): --mysql-socket, --mysql-host (localhost: the
   default socket), --mysql-port (3306), --mysql-user (sbtest), --mysql-password, --mysql-db (sbtest).
   Workload options: --tables --table-size --threads --time --warmup-time --report-interval
   --percentile --range-size --point-selects --simple-ranges --sum-ranges --order-ranges
   --distinct-ranges --index-updates --non-index-updates --delete-inserts --range-selects
   --skip-trx --auto-inc --rand-type (uniform gaussian special pareto zipfian) --rand-seed
   --rand-spec-iter --rand-spec-pct --rand-spec-res --rand-pareto-h --rand-zipfian-exp
   --mysql-storage-engine --create-table-options --mysql-ignore-errors (list or none).
   perfbisect's default --rand-seed is 1 (the same rows and statements every time); 0 seeds
   from the clock as sysbench does.

   perfbisect options:
     --driver builtin|sysbench  the built-in workload (default) or real sysbench 1.0 with the
                                same options, its report read into the same result
     --sysbench-path PATH       the sysbench binary (default: sysbench in PATH)
     --format text|json         the report: sysbench's text (default) or JSON
     --output FILE              write the report to FILE (atomically) instead of standard output
     -v, --verbose              with --driver sysbench: show sysbench's own output too

   Exit codes: 0 done, 2 bad arguments, 1 the server or the client failed, 130 interrupted.`

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:            "bench",
		Usage:           "run the workload against a server you name, like sysbench: prepare, run or cleanup",
		UsageText:       benchUsage,
		SkipFlagParsing: true, // sysbench's command line, parsed by sysbench.ParseArgs
		Action:          benchAction,
	}
}

func benchAction(c *cli.Context) error {
	req, verbose, notes, help, err := app.ParseBenchArgs(c.Args().Slice())
	switch {
	case err != nil:
		return err
	case help:
		fmt.Fprintln(c.App.Writer, "usage: "+benchUsage)
		return nil
	}
	for _, n := range notes {
		fmt.Fprintln(os.Stderr, "perfbisect bench: note: "+n)
	}
	req.Out, req.Log = c.App.Writer, os.Stderr
	if verbose {
		req.Raw = os.Stderr // sysbench's own output
	}
	return app.Bench(c.Context, req)
}
