package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect/report"
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
		SkipFlagParsing: true, // sysbench's command line, parsed by bench.ParseArgs
		Action:          benchAction,
	}
}

// benchFlags are perfbisect's own options of the bench command.
type benchFlags struct {
	driver, sysbenchPath, format, output string
	verbose                              bool
	formatSet, outputSet                 bool // --format, --output given
}

// splitBenchArgs takes perfbisect's own options out of args and leaves
// sysbench's command line. help is true for -h/--help.
func splitBenchArgs(args []string) (f benchFlags, rest []string, help bool, err error) {
	f.driver, f.format = "builtin", "text"
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			rest = append(rest, a)
			continue
		}
		var dst *string
		switch name {
		case "h", "help":
			return f, nil, true, nil
		case "v", "verbose":
			f.verbose = true
			continue
		case "driver":
			dst = &f.driver
		case "sysbench-path":
			dst = &f.sysbenchPath
		case "format":
			dst, f.formatSet = &f.format, true
		case "output":
			dst, f.outputSet = &f.output, true
		default:
			rest = append(rest, a)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") {
				return f, nil, false, usageErr("--%s needs a value", name)
			}
			i++
			value = args[i]
		}
		*dst = value
	}
	switch f.driver {
	case "builtin", "built-in", "sysbench":
	default:
		return f, nil, false, usageErr("--driver %q: want builtin or sysbench", f.driver)
	}
	if f.format != "text" && f.format != "json" {
		return f, nil, false, usageErr("--format %q: want text or json", f.format)
	}
	return f, rest, false, nil
}

func benchAction(c *cli.Context) error {
	f, args, help, err := splitBenchArgs(c.Args().Slice())
	if err != nil {
		return err
	}
	if help {
		fmt.Fprintln(c.App.Writer, "usage: "+benchUsage)
		return nil
	}
	inv, err := bench.ParseArgs(args)
	if err != nil {
		return usageErr("%s", flagError(c, err))
	}
	o := inv.Options
	if err := o.Validate(); err != nil {
		return usageErr("%v", err)
	}
	switch inv.Command {
	case "prepare", "run", "cleanup":
	case "":
		return usageErr("say what to do: prepare, run or cleanup (see perfbisect bench --help)")
	default:
		return usageErr("%s: not supported; prepare, run and cleanup are", inv.Command)
	}
	if (f.outputSet || f.formatSet) && inv.Command != "run" {
		return usageErr("--output and --format are for run; %s prints one line", inv.Command)
	}
	if f.outputSet && f.output == "" {
		return usageErr("--output: name a file")
	}
	if f.output != "" {
		if err := report.CheckWritable("output", f.output); err != nil {
			return usageErr("%v", err)
		}
	}
	if o.Workload == "oltp_insert" && !o.AutoInc && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--rand-seed") }) {
		// Its ids come from the unique sequence of the seed: a fixed seed would
		// insert the ids of the last run again (duplicate keys).
		o.RandSeed = 0
		inv.Notes = append(inv.Notes, "oltp_insert --auto-inc=off: --rand-seed from the clock (a fixed seed repeats the last run's ids); give --rand-seed to fix it")
	}
	for _, n := range inv.Notes {
		fmt.Fprintln(os.Stderr, "perfbisect bench: note: "+n)
	}
	var raw io.Writer // sysbench's own output, with -v
	if f.verbose {
		raw = os.Stderr
	}
	return app.Bench(c.Context, app.BenchRequest{Command: inv.Command, Options: o, Conn: inv.Conn,
		Sysbench: f.driver == "sysbench", SysbenchPath: f.sysbenchPath, Format: f.format, Output: f.output,
		Out: c.App.Writer, Log: os.Stderr, Raw: raw})
}
