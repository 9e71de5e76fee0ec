package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/app"
	"github.com/perfbisect/perfbisect/stats"
)

// measurementFlags are the flags of every command that builds and measures
// revisions (start, run): the tree, the server's options, the workload, the
// decision policy and the state directory.
func measurementFlags() []cli.Flag {
	d := bench.DefaultOptions() // sysbench 1.0's defaults
	flags := []cli.Flag{
		&cli.StringFlag{Name: "repo", Value: ".", Usage: "the server's git source tree"},
		&cli.StringFlag{Name: "my-cnf", Usage: "option file for the server (its [mysqld] settings apply; datadir, socket, port, logs are the tool's)"},
		&cli.StringFlag{Name: "workload", Value: "oltp_read_only", Usage: "oltp_read_only, oltp_read_write, oltp_write_only, oltp_point_select, oltp_update_index, oltp_update_non_index, oltp_insert, oltp_delete, or oltp_legacy (sysbench 0.4's --test=oltp)"},
		&cli.IntFlag{Name: "threads", Value: d.Threads, Usage: "client threads (connections)"},
		&cli.IntFlag{Name: "tables", Value: d.Tables, Usage: "number of sbtest tables"},
		&cli.IntFlag{Name: "table-size", Value: d.TableSize, Usage: "rows per table"},
		&cli.StringFlag{Name: "time", Value: "10", Usage: "measured window per run: seconds (10) or a duration (10s)"},
		&cli.StringFlag{Name: "warmup", Aliases: []string{"warmup-time"}, Value: "2", Usage: "warm-up before the measured window, excluded from every number: seconds or a duration"},
		&cli.IntFlag{Name: "range-size", Value: d.RangeSize, Usage: "rows per range query"},
		&cli.StringFlag{Name: "rand-type", Value: d.RandType, Usage: "id distribution: uniform, special, gaussian, pareto, zipfian"},
		&cli.Int64Flag{Name: "rand-seed", Value: d.RandSeed, Usage: "seed of the data and the workload's random values (same for every revision)"},
		&cli.StringFlag{Name: "workload-options", Usage: "any other sysbench options, as on sysbench's command line (\"--point-selects=1 --skip-trx=on\", or a 0.4 line such as \"--test=oltp --oltp-read-only=on\"); they win over the flags above"},
		&cli.StringFlag{Name: "driver", Value: "builtin", Usage: "builtin (the built-in workload) or sysbench (real sysbench 1.0 with the same options; the tables are loaded by the built-in prepare)"},
		&cli.StringFlag{Name: "sysbench-path", Usage: "the sysbench binary for --driver sysbench (default: sysbench in PATH)"},
		&cli.StringFlag{Name: "server-cpus", Usage: "CPUs the measured server runs on, as for taskset -c (\"1\", \"2-3\"); default: all"},
		&cli.StringFlag{Name: "client-cpus", Usage: "CPUs the workload's client (the built-in workload, or sysbench) runs on during a run; default: all"},
		&cli.IntFlag{Name: "repeats", Value: 6, Usage: "starting runs per side of the endpoints (and of compare); a midpoint starts from a plan made from the endpoints' shift and noise"},
		&cli.IntFlag{Name: "max-repeats", Value: 18, Usage: "run limit per decision; still undecided then: the commit is skipped (start with --search bayes: the endpoints' limit per side, 100 unless set)"},
		&cli.StringFlag{Name: "threshold", Value: "5", Usage: "smallest relative change that counts, in percent (5 or 5%)"},
		&cli.StringFlag{Name: "confidence", Value: "0.95", Usage: "probability that the whole answer is right (0.95 or 95%); split over the session's decisions (start with --search bayes: 0.99 unless set)"},
		&cli.StringFlag{Name: "metric", Value: "tps", Usage: "what a run is judged by: tps, qps, p95 or p99 (event latency, lower is better), or cpu-per-txn (server CPU time per transaction: steadier on a noisy machine)"},
		&cli.StringFlag{Name: "find", Value: "regression", Usage: "regression (bad is slower than good) or improvement (new is faster than old; say --old/--new)"},
	}
	flags = append(flags, buildFlags()...)
	return append(flags,
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
		&cli.StringFlag{Name: "preset", Value: "auto", Usage: "built-in CMake recipe: auto (by the tree's flavor and version), none, " + strings.Join(build.PresetNames(), ", ")},
		&cli.StringFlag{Name: "cmake-args", Usage: "extra CMake configure arguments after the preset's, split like a shell would (\"-DPLUGIN_X=NO -DWITH_SSL=bundled\")"},
		&cli.StringFlag{Name: "build-cmd", Usage: "shell command that configures and builds instead of CMake, run in the build directory with SRC, BUILD_DIR, PREFIX, JOBS, DESTDIR set; it (or --install-cmd) installs into $DESTDIR$PREFIX"},
		&cli.StringFlag{Name: "install-cmd", Usage: "shell command that installs into $DESTDIR$PREFIX instead of cmake --install"},
		&cli.IntFlag{Name: "build-jobs", DefaultText: "number of CPUs", Usage: "parallel build jobs"},
		&cli.StringFlag{Name: "build-timeout", Usage: "longest configure+build+install of one revision (90m, or seconds); past it the build is killed and the revision skipped (default: none)"},
		&cli.StringFlag{Name: "build-cache-size", Value: "20GiB", Usage: "disk space installed builds may keep in the state directory (least recently used ones beyond it are deleted)"},
		&cli.StringFlag{Name: "distcc-hosts", Usage: "compile on these distcc hosts (DISTCC_HOSTS syntax, \"localhost/2 build1/8\"); raise --build-jobs to match"},
		&cli.BoolFlag{Name: "no-ccache", Usage: "do not use ccache even when installed"},
		&cli.BoolFlag{Name: "retry-failed-builds", Usage: "build again the revisions an earlier session found broken (after fixing what was missing on the machine)"},
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
			&cli.BoolFlag{Name: "no-confirm", Usage: "classic search: do not confirm the first bad commit against its parent (the probabilistic search's answer always rests on both)"},
			&cli.BoolFlag{Name: "first-parent", Usage: "follow only the first parent of merges, as git bisect --first-parent (the answer can be a merge)"},
			&cli.IntFlag{Name: "jobs", Value: 1, Usage: "commits placed per round (k-ary search; they share the good and bad runs); 1 is exact bisection"},
			&cli.StringFlag{Name: "search", Value: session.SearchBayes, Usage: "bayes (probabilistic bisection: every run updates the posterior over the first bad commit; default --confidence 0.99) or classic (one sequential decision per midpoint, then the confirmation against its parent; --max-repeats and --no-confirm apply)"},
			&cli.IntFlag{Name: "max-runs", DefaultText: "6x the pre-flight estimate, 400 to 4000", Usage: "bayes: the most runs the session may take (the endpoints' included); then it answers with the smallest range that holds the confidence"},
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

// expectedSteps is about how many commits a bisection of n candidates
// builds and measures besides the endpoints: log2 n, and the culprit's
// parent confirmed.
func expectedSteps(n int) int {
	return int(math.Ceil(math.Log2(float64(max(n, 1))))) + 1
}

func startAction(c *cli.Context) error {
	ctx := c.Context
	// Inputs first: every bad input is a one-line error and exit 2, before any build.
	if c.NArg() > 0 {
		// git bisect start takes the bad revision first, compare the old one:
		// a guess would silently swap them.
		return usageErr("perfbisect start takes its revisions as flags, not as arguments (%s): perfbisect start --good GOOD --bad BAD", strings.Join(c.Args().Slice(), " "))
	}
	if c.String("good") == "" || c.String("bad") == "" {
		return usageErr("--good and --bad are required: a revision without the regression and one with it (tag, branch, hash or version)")
	}
	if j := c.String("json"); j != "" {
		if err := report.CheckWritable("json", j); err != nil {
			return app.With(app.Usage, err)
		}
	}
	if err := checkHTML(c); err != nil {
		return err
	}
	su, err := newSetup(c)
	if err != nil {
		return err
	}
	defer su.close()
	good, err := bisect.Resolve(su.Repo, c.String("good"))
	if err != nil {
		return app.With(app.Usage, fmt.Errorf("--good: %w", err))
	}
	bad, err := bisect.Resolve(su.Repo, c.String("bad"))
	if err != nil {
		return app.With(app.Usage, fmt.Errorf("--bad: %w", err))
	}
	commits, err := bisect.Range(su.Repo, good, bad)
	if err != nil {
		code := app.Failure
		if errors.Is(err, bisect.ErrUsage) {
			code = app.Usage
		}
		return app.With(code, err)
	}
	revs := []string{good, bad}
	for _, cm := range commits {
		revs = append(revs, cm.Hash)
	}
	if err := su.CheckSettings(revs...); err != nil {
		return err
	}
	cfg := su.Policy
	cfg.Good, cfg.Bad, cfg.Commits = good, bad, commits
	cfg.NoConfirm = c.Bool("no-confirm")
	cfg.FirstParent, cfg.Jobs = c.Bool("first-parent"), c.Int("jobs")
	if cfg.Jobs < 1 {
		return usageErr("--jobs %d: want 1 to 16 commits per round (1 is exact bisection)", cfg.Jobs)
	}
	cfg.Search, cfg.MaxRuns = c.String("search"), c.Int("max-runs")
	if cfg.Search == session.SearchBayes && !c.IsSet("confidence") {
		cfg.Confidence = bayesConfidence
	}
	if cfg.Search == session.SearchBayes && !c.IsSet("max-repeats") {
		cfg.MaxRepeats = session.BayesEndpointRuns
	}
	if err := cfg.Validate(); err != nil {
		return app.With(app.Usage, err)
	}
	if err := su.Lock(c.String("state-dir")); err != nil {
		return err
	}
	progress := su.Log

	// The store: resume the unfinished session when it is this one.
	st := su.Store
	sess, err := st.Current(store.KindStart)
	if err != nil {
		return app.With(app.Failure, err)
	}
	if sess != nil && legacySearch(sess) && !c.IsSet("search") {
		// Begun by a perfbisect without the probabilistic search: it
		// resumes as it was started (the classic search, its confidence).
		cfg.Search = session.SearchClassic
		if !c.IsSet("confidence") {
			cfg.Confidence = su.Policy.Confidence
		}
		if !c.IsSet("max-repeats") {
			cfg.MaxRepeats = su.Policy.MaxRepeats
		}
	}
	identity := su.Identity(good, bad, startIdentity(cfg, su.RepoRoot))
	identity["confidence"] = fmt.Sprint(cfg.Confidence)
	k := identity.Key()
	if sess != nil && sess.Key != k && resuming {
		return usageErr("the unfinished session in %s cannot be resumed as it was started: %s changed since (perfbisect %s). Restore them, or end the session with perfbisect reset",
			su.StateDir, identity.Diff(sess.Identity()), strings.Join(sess.Args, " "))
	}
	if sess != nil && sess.Key != k {
		return usageErr("an unfinished session is stored in %s (started %s: perfbisect %s); it differs from this one in: %s. Run perfbisect resume to continue it, or perfbisect reset to end it",
			su.StateDir, sess.Created.Local().Format("2006-01-02 15:04"), strings.Join(sess.Args, " "), identity.Diff(sess.Identity()))
	}
	if sess != nil {
		if cfg.Replay, err = st.Events(sess.ID); err != nil {
			return app.With(app.Failure, err)
		}
		n, _ := st.RunCount(sess.ID)
		fmt.Fprintf(progress, "resuming session %d started %s: %d runs stored are used, not measured again\n",
			sess.ID, sess.Created.Local().Format("2006-01-02 15:04"), n)
	}
	subjects := func(h string) string { return bisect.Subject(su.Repo, h) }
	table := &report.Table{W: su.stdout, Subjects: subjects, Metric: cfg.Metric, Color: su.color()}
	var res *session.Result
	steps := su.StoreSession(&cfg, func() int64 { return sess.ID }, 0, 0, func(s session.Step) { table.Step(s, res.Runs) })
	cfg.Diverged = func(seq int) {
		if err := st.Truncate(sess.ID, seq, steps()); err != nil {
			printError(err)
		}
	}
	// The measurer records builds under the session, known once it is stored.
	m := su.Measurer(func() int64 { return sess.ID })
	run, err := session.New(cfg, m)
	if err != nil {
		return app.With(app.Usage, err) // nothing stored: the same start with other flags may follow
	}
	if sess == nil {
		dir, _ := os.Getwd()
		if sess, err = st.Begin(store.KindStart, startArgs(c), dir, good, bad, identity); err != nil {
			return app.With(app.Failure, err)
		}
	}
	fmt.Fprintf(progress, "%d commit(s) after good %.10s up to bad %.10s: about %d steps (a build each); the runs and the time they take are estimated once the endpoints are measured; state in %s\n",
		len(commits), good, bad, expectedSteps(len(commits)), su.StateDir)
	priorNoise(progress, st, sess.ID, cfg.Metric, map[string]string{"good": good, "bad": bad})
	res = run.Result()
	_, runErr := run.Run(ctx)
	doc := report.NewDocument(res, cfg.Metric, subjects)
	doc.Place(good, bad, commits)
	doc.Search = cfg.Search
	if runErr != nil {
		doc.Result, doc.Error = "error", runErr.Error()
		if ctx.Err() != nil {
			doc.Error = "interrupted"
		}
	}
	if c.String("json") != "" {
		if err := report.WriteJSON(c.String("json"), doc); err != nil {
			printError(err)
		}
	}
	htmlReport(c, st, report.Page{Title: "perfbisect: bisection " + c.String("good") + ".." + c.String("bad"), Bisect: &doc}, sess.ID)
	if runErr != nil {
		var ee *session.EndpointError
		if errors.As(runErr, &ee) && ctx.Err() == nil {
			// Resuming would only repeat it: the session ends here.
			_ = st.End(sess.ID, store.Failed, "error", doc)
		}
		return app.SessionError(runErr, ctx.Err() != nil, su.StateDir, su.RepoRoot)
	}
	if err := st.End(sess.ID, store.Done, string(res.Outcome), doc); err != nil {
		printError(err)
	}
	report.Final(su.stdout, res, subjects)
	switch res.Outcome {
	case session.Found:
		return nil
	case session.NoRegression:
		return app.Answer(app.NoRegression)
	default:
		return app.Answer(app.Undecided)
	}
}

// bayesConfidence is start's default --confidence with the probabilistic
// search: the simulation grid (docs/statistics.md) names a wrong culprit in
// at most 1% of sessions in every row at it.
const bayesConfidence = 0.99

// startIdentity is what start adds to the session identity: the search and
// its settings. The classic search adds no "search" entry, so that a session
// begun before the probabilistic search existed has the same identity.
func startIdentity(cfg session.Config, repoRoot string) map[string]string {
	id := map[string]string{"no-confirm": fmt.Sprint(cfg.NoConfirm), "repo": repoRoot,
		"first-parent": fmt.Sprint(cfg.FirstParent), "jobs": fmt.Sprint(cfg.Jobs)}
	if cfg.Search != session.SearchClassic {
		id["search"] = cfg.Search
		id["max-runs"] = fmt.Sprint(cfg.MaxRuns)
	}
	return id
}

// legacySearch reports whether a stored start session's identity predates
// the search setting (it was a classic search).
func legacySearch(x *store.Session) bool {
	id := x.Identity()
	_, ok := id.Search()
	return len(id) > 0 && !ok
}

// resuming is set by perfbisect resume before it runs the stored start command.
var resuming bool

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

// priorNoise prints the run-to-run noise earlier sessions measured on the same
// commits with the same workload, build recipe and option file: what to expect
// before this session's own runs (which alone decide).
func priorNoise(w io.Writer, st *store.Store, id int64, metric session.Metric, commits map[string]string) {
	for _, name := range []string{"good", "bad"} {
		runs, err := st.EarlierRuns(id, commits[name], []string{"workload", "recipe", "my-cnf content"})
		if err != nil || len(runs) < 3 {
			continue
		}
		vals := make([]float64, len(runs))
		for i, r := range runs {
			vals[i] = metric.Value(r)
		}
		fmt.Fprintf(w, "earlier sessions measured %s %.10s %d times: median %s %.1f, noise (robust CV) %.1f%%\n",
			name, commits[name], len(runs), metric, stats.Median(vals), 100*stats.RobustCV(vals))
	}
}
