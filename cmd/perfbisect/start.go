package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/internal/app"
	"github.com/perfbisect/perfbisect/internal/usage"
)

// measurementFlags are the flags of every command that builds and measures
// revisions (start, run): the tree, the server's options, the workload, the
// decision policy and the state directory.
func measurementFlags() []cli.Flag {
	d := app.WorkloadDefaults() // sysbench 1.0's defaults
	flags := []cli.Flag{
		&cli.StringFlag{Name: "repo", Value: ".", Usage: "the server's git source tree"},
		&cli.StringSliceFlag{Name: "my-cnf", Usage: "option file for the server (its [mysqld] settings apply; datadir, socket, port, logs are the tool's); compare takes it once per side too"},
		&cli.StringFlag{Name: "workload", Value: "oltp_read_only", Usage: "oltp_read_only, oltp_read_write, oltp_write_only, oltp_point_select, oltp_update_index, oltp_update_non_index, oltp_insert, oltp_delete, or oltp_legacy (sysbench 0.4's --test=oltp); tpcc (TPC-C, built in; --warehouses); a SQL workload file (a path: join.sql, ./my/mix.sql; docs/workload.md); or a sysbench Lua script, run by sysbench with its own prepare: its path (tpcc.lua) or a name sysbench finds (select_random_ranges, bulk_insert)"},
		&cli.IntFlag{Name: "warehouses", Value: 1, Usage: "TPC-C's scale for --workload tpcc (each warehouse is about 100 MB of data)"},
		&cli.IntFlag{Name: "threads", Value: d.Threads, Usage: "client threads (connections)"},
		&cli.IntFlag{Name: "tables", Value: d.Tables, Usage: "number of sbtest tables"},
		&cli.IntFlag{Name: "table-size", Value: d.TableSize, Usage: "rows per table"},
		&cli.StringFlag{Name: "time", Value: "10", Usage: "measured window per run: seconds (10) or a duration (10s)"},
		&cli.StringFlag{Name: "warmup", Aliases: []string{"warmup-time"}, Value: "2", Usage: "warm-up before the measured window, excluded from every number: seconds or a duration"},
		&cli.IntFlag{Name: "range-size", Value: d.RangeSize, Usage: "rows per range query"},
		&cli.StringFlag{Name: "rand-type", Value: d.RandType, Usage: "id distribution: uniform, special, gaussian, pareto, zipfian"},
		&cli.Int64Flag{Name: "rand-seed", Value: d.RandSeed, Usage: "seed of the data and the workload's random values (same for every revision)"},
		&cli.StringFlag{Name: "workload-options", Usage: "any other sysbench options, as on sysbench's command line (\"--point-selects=1 --skip-trx=on\", or a 0.4 line such as \"--test=oltp --oltp-read-only=on\"); they win over the flags above. For a script, its own options (\"--scale=1 --use_fk=0\"); --tables, --table-size, --range-size and --rand-type reach a script only when given"},
		&cli.StringFlag{Name: "driver", Value: "builtin", Usage: "builtin (the built-in workload) or sysbench (real sysbench 1.0 with the same options; the tables are loaded by the built-in prepare); a script always runs under sysbench"},
		&cli.StringFlag{Name: "sysbench-path", Usage: "the sysbench binary for --driver sysbench (default: sysbench in PATH)"},
		&cli.StringFlag{Name: "server-cpus", Usage: "CPUs the measured server runs on, as for taskset -c (\"1\", \"2-3\"); default: all"},
		&cli.StringFlag{Name: "client-cpus", Usage: "CPUs the workload's client (the built-in workload, or sysbench) runs on during a run; default: all"},
		&cli.IntFlag{Name: "repeats", Value: 6, Usage: "starting runs per side of the endpoints (and of compare); a midpoint starts from a plan made from the endpoints' shift and noise"},
		&cli.IntFlag{Name: "max-repeats", Value: 18, Usage: "run limit per decision; still undecided then: the commit is skipped (start with --search bayes: the endpoints' limit per side, 100 unless set)"},
		&cli.StringFlag{Name: "threshold", Value: "5", Usage: "smallest relative change that counts, in percent (5 or 5%)"},
		&cli.StringFlag{Name: "confidence", Value: "0.95", Usage: "probability that the whole answer is right (0.95 or 95%); split over the session's decisions (start with --search bayes: 0.99 unless set)"},
		&cli.StringFlag{Name: "metric", Value: "tps", Usage: "what a run is judged by: tps, qps, p95 or p99 (event latency, lower is better), or cpu-per-txn (server CPU time per transaction: steadier on a noisy machine); for tpcc also tpmc (its default: New-Orders per minute) and cpu-per-new-order; default: the workload's headline (qps for a script or SQL file without transactions)"},
		&cli.StringFlag{Name: "find", Value: "regression", Usage: "regression (bad is slower than good) or improvement (new is faster than old; say --old/--new)"},
	}
	flags = append(flags, buildFlags()...)
	return append(flags,
		&cli.StringFlag{Name: "start-timeout", Value: "3m", Usage: "longest wait for a started server to accept connections (a large redo log's recovery is slow); past it the start fails with the server's error log and the run is tried again"},
		&cli.BoolFlag{Name: "fresh-datadir", Usage: "initialise a datadir and load the tables for every run instead of restoring the prepared snapshot (slower)"},
		&cli.StringFlag{Name: "snapshot-cache-size", Value: "10GiB", Usage: "disk space the prepared datadirs may keep in the state directory across sessions (500MiB, 20GB); least recently used ones beyond it are deleted"},
		&cli.StringFlag{Name: "state-dir", Usage: "builds, datadir snapshots, the store and logs (default: the user's cache dir, per repository)"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress lines on stderr"},
	)
}

// buildFlags are the flags that say how revisions are built (start, run,
// compare, scan, build).
func buildFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "preset", Value: "auto", Usage: "built-in CMake recipe: auto (by the tree's flavor and version), none, " + strings.Join(app.PresetNames(), ", ")},
		&cli.StringFlag{Name: "cmake-args", Usage: "extra CMake configure arguments after the preset's, split like a shell would (\"-DPLUGIN_X=NO -DWITH_SSL=bundled\")"},
		&cli.StringFlag{Name: "build-cmd", Usage: "shell command that configures and builds instead of CMake, run in the build directory with SRC, BUILD_DIR, PREFIX, JOBS, DESTDIR set; it (or --install-cmd) installs into $DESTDIR$PREFIX"},
		&cli.StringFlag{Name: "install-cmd", Usage: "shell command that installs into $DESTDIR$PREFIX instead of cmake --install"},
		&cli.IntFlag{Name: "build-jobs", DefaultText: "number of CPUs", Usage: "parallel build jobs"},
		&cli.StringFlag{Name: "build-timeout", Usage: "longest configure+build+install of one revision (90m, or seconds); past it the build is killed and the revision skipped (default: none)"},
		&cli.StringFlag{Name: "build-cache-size", Value: "20GiB", Usage: "disk space installed builds may keep in the state directory (least recently used ones beyond it are deleted)"},
		&cli.StringFlag{Name: "distcc-hosts", Usage: "compile on these distcc hosts (DISTCC_HOSTS syntax, \"localhost/2 build1/8\"); --build-jobs defaults to their slots"},
		&cli.BoolFlag{Name: "icecc", Usage: "compile on the icecream farm this machine's iceccd belongs to; raise --build-jobs to the farm's size"},
		&cli.StringFlag{Name: "shared-cache", Usage: "a build cache shared with other machines (a directory they all mount, or an http:// URL that stores what is PUT): revisions there are fetched, not built; builds made here are stored there"},
		&cli.BoolFlag{Name: "no-ccache", Usage: "do not use ccache even when installed"},
		&cli.BoolFlag{Name: "retry-failed-builds", Usage: "build again the revisions an earlier session found broken (after fixing what was missing on the machine)"},
		&cli.StringFlag{Name: "layouts", DefaultText: "run for a server tree built by CMake's Makefile generator with lld installed and no --runner, else 1", Usage: "code layouts: run links each run's server again from the build's objects with the code sections shuffled (ld.lld), K keeps K such layouts per build and rotates the runs over them, so that where the linker placed the code averages out instead of passing for a change (run and K need lld and a CMake server tree); 1 measures the build's own binary alone"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "show the build tools' raw output on stderr"},
	}
}

func startCommand() *cli.Command {
	cmd := &cli.Command{
		Name:  "start",
		Usage: "bisect a performance regression between a good and a bad revision (resumes an unfinished one)",
		UsageText: "perfbisect start --good REF --bad REF [--my-cnf FILE] [--workload oltp_read_only] [options]\n\n" +
			"The session is kept in the state directory's store: run the same command again (or perfbisect resume)\n" +
			"after an interrupt to continue without measuring again what was measured; perfbisect reset ends it.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "good", Aliases: []string{"old"}, Usage: "(required) a revision without the change (tag, branch, hash, HEAD~3, or a version such as 10.0.22)"},
			&cli.StringFlag{Name: "bad", Aliases: []string{"new"}, Usage: "(required) a revision with the change"},
			&cli.BoolFlag{Name: "no-confirm", Usage: "do not put the first bad commit head to head with its parent before naming it (fewer runs; a commit whose few runs were off its level can then be named)"},
			&cli.BoolFlag{Name: "first-parent", Usage: "follow only the first parent of merges, as git bisect --first-parent (the answer can be a merge)"},
			&cli.BoolFlag{Name: "keep-doc-commits", Usage: "also test the commits that change only documentation, tests or CI files (README*, *.md, Docs/, mysql-test/, .github/); by default they are left out: they build their parent's server"},
			&cli.IntFlag{Name: "jobs", Value: 1, Usage: "commits placed per round (k-ary search; they share the good and bad runs); 1 is exact bisection"},
			&cli.StringFlag{Name: "search", Value: app.SearchBayes, Usage: "bayes (probabilistic bisection: every run updates the posterior over the first bad commit; default --confidence 0.99) or classic (one sequential decision per midpoint, then the confirmation against its parent; --max-repeats applies)"},
			&cli.IntFlag{Name: "max-runs", DefaultText: "6x the pre-flight estimate, 400 to 4000", Usage: "bayes: the most runs the session may take (the endpoints' included); then it answers with the smallest range that holds the confidence"},
			&cli.StringFlag{Name: "binaries", Usage: "a directory of the vendors' binary tarballs (mariadb-10.0.22-linux-x86_64.tar.gz, mysql-8.0.36-linux-glibc2.28-x86_64.tar.xz, Percona-Server-5.7.44-48-Linux.x86_64.glibc2.17.tar.gz): the releases between good and bad that have one are bisected first on those binaries, nothing built, then the search goes on from source between the two releases it narrowed to"},
			&cli.StringSliceFlag{Name: "runner", Usage: "take the runs on this runner host instead of here (repeat for several: --search bayes places a run on each at once, each measuring its own good and bad): ssh://[user@]host[:port][/root] or a host name (ssh, its config and keys), or slurm://node[/root] (srun); ?perfbisect=PATH names the host's perfbisect, which must be this one's build; PERFBISECT_SSH=\"ssh -F FILE\" replaces ssh. Builds are made here and shipped once per host (docs/runners.md)"},
			&cli.BoolFlag{Name: "no-explain", Usage: "do not profile the first bad commit and its parent once it is named (by default up to 3 runs each, a tenth of the session's runs, say why it is slower: perfbisect explain; where their servers' settings differ, as many again of the parent, the culprit with the parent's values pinned and the culprit)"},
			&cli.IntFlag{Name: "explain-runs", DefaultText: "a tenth of the session's runs, at most 3", Usage: "profiled runs each of the first bad commit and its parent that say why it is slower, once it is named (2 or more; 0 is the default; --no-explain wins)"},
			&cli.StringFlag{Name: "json", Usage: "write the result as JSON to this file"},
			htmlFlag(),
		}, measurementFlags()...),
		Action: startAction,
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr("%s", flagError(c, err))
		},
	}
	// start's defaults differ from compare's with its default search.
	for _, f := range cmd.Flags {
		switch f := f.(type) {
		case *cli.StringFlag:
			if f.Name == "confidence" {
				f.DefaultText = `0.99; 0.95 with --search classic`
			}
		case *cli.IntFlag:
			if f.Name == "max-repeats" {
				f.DefaultText = `100 for the endpoints; 18 with --search classic`
			}
		}
	}
	return cmd
}

// usageErr makes an exit-2 error.
func usageErr(format string, args ...any) error {
	return app.With(app.Usage, fmt.Errorf(format, args...))
}

func startAction(c *cli.Context) error {
	// Inputs first: every bad input is a one-line error and exit 2, before any build.
	if c.NArg() > 0 {
		// git bisect start takes the bad revision first, compare the old one:
		// a guess would silently swap them.
		return usageErr("perfbisect start takes its revisions as flags, not as arguments (%s): perfbisect start --good GOOD --bad BAD", strings.Join(c.Args().Slice(), " "))
	}
	if c.String("good") == "" || c.String("bad") == "" {
		return app.With(app.Usage, usage.Errorf("{good} and {bad} are required: a revision without the regression and one with it (tag, branch, hash or version)"))
	}
	return bisectFrom(c, c.String("good"), c.String("bad"), c.Bool("first-parent"), nil, startArgs(c))
}

// bisectFrom is start's work from its endpoints (as typed), with hand marks
// (replay) and the command stored for resume.
func bisectFrom(c *cli.Context, good, bad string, firstParent bool, marks []app.HandMark, args []string) error {
	out, err := output(c, "")
	if err != nil {
		return err
	}
	su, err := newSetup(c)
	if err != nil {
		return err
	}
	defer su.close()
	return app.Start(c.Context, su.Setup, app.StartRequest{
		Good: good, Bad: bad, Marks: marks,
		NoConfirm: c.Bool("no-confirm"), FirstParent: firstParent, KeepDocCommits: c.Bool("keep-doc-commits"),
		ExplainRuns: c.Int("explain-runs"), NoExplain: c.Bool("no-explain"),
		StateDir: c.String("state-dir"), Args: args, Resuming: c.App.Metadata[resumingKey] == true,
		Out: su.Stdout, Color: su.color(), Output: out,
	})
}

func replayCommand() *cli.Command {
	cmd := startCommand()
	var flags []cli.Flag
	for _, f := range cmd.Flags {
		if n := f.Names()[0]; n != "good" && n != "bad" {
			flags = append(flags, f)
		}
	}
	return &cli.Command{
		Name:  "replay",
		Usage: "bisect from a git bisect log: its first bad and good revisions are the endpoints, its later marks are taken as marks by hand",
		UsageText: "perfbisect replay [start's options] LOG\n\n" +
			"LOG is what git bisect log (or perfbisect log) printed: a bisection begun by hand, or by\n" +
			"someone else, goes on measured. Its good, bad and skip lines after the endpoints enter the\n" +
			"search as certain (no run is taken of those commits), their reason naming the log's line;\n" +
			"marks outside the endpoints' range are left out, saying so. The session is then a start\n" +
			"session like any other: perfbisect resume, status, mark, report and reset apply.",
		Flags:        flags,
		Action:       replayAction,
		OnUsageError: cmd.OnUsageError,
	}
}

func replayAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("replay takes one git bisect log file (got %s): perfbisect replay [options] bisect.log", app.Counted(c.NArg(), "argument"))
	}
	name := c.Args().First()
	log, err := app.OpenBisectLog(name, c.String("repo"))
	if err != nil {
		return err
	}
	fp := c.Bool("first-parent") || log.FirstParent
	args := log.StartArgs(startArgs(c)[1:], name, c.Bool("first-parent"))
	return bisectFrom(c, log.Good, log.Bad, fp, log.Marks, args)
}

// resumingKey marks, in the App's Metadata, the application perfbisect
// resume runs the stored start command with (no package state: a test may
// run several applications).
const resumingKey = "resuming"

// startArgs returns the command's arguments as typed (for resume, and the
// command line of HTML reports): the process's arguments from the command's
// name on.
func startArgs(c *cli.Context) []string {
	for i, a := range os.Args {
		if a == c.Command.Name && i > 0 {
			return append([]string(nil), os.Args[i:]...)
		}
	}
	return append([]string{"start"}, c.Args().Slice()...)
}
