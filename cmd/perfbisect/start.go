package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	shellwords "github.com/mattn/go-shellwords"
	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/reap"
	"github.com/perfbisect/perfbisect/serverctl"
)

func startCommand() *cli.Command {
	d := bench.DefaultOptions() // sysbench 1.0's defaults
	return &cli.Command{
		Name:      "start",
		Usage:     "bisect a performance regression between a good and a bad revision",
		UsageText: "perfbisect start --good REF --bad REF [--my-cnf FILE] [--workload oltp_read_only] [options]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "repo", Value: ".", Usage: "the server's git source tree"},
			&cli.StringFlag{Name: "good", Aliases: []string{"old"}, Usage: "(required) a revision without the regression (tag, branch, hash, HEAD~3, or a version such as 10.0.22)"},
			&cli.StringFlag{Name: "bad", Aliases: []string{"new"}, Usage: "(required) a revision with the regression"},
			&cli.StringFlag{Name: "my-cnf", Usage: "option file for the server (its [mysqld] settings apply; datadir, socket, port, logs are the tool's)"},
			&cli.StringFlag{Name: "workload", Value: "oltp_read_only", Usage: "oltp_read_only, oltp_read_write, oltp_write_only, oltp_point_select, oltp_update_index, oltp_update_non_index, oltp_insert, oltp_delete"},
			&cli.IntFlag{Name: "threads", Value: d.Threads, Usage: "client threads (connections)"},
			&cli.IntFlag{Name: "tables", Value: d.Tables, Usage: "number of sbtest tables"},
			&cli.IntFlag{Name: "table-size", Value: d.TableSize, Usage: "rows per table"},
			&cli.StringFlag{Name: "time", Value: "10", Usage: "measured window per run: seconds (10) or a duration (10s)"},
			&cli.StringFlag{Name: "warmup", Value: "2", Usage: "warm-up before the measured window, excluded from every number: seconds or a duration"},
			&cli.IntFlag{Name: "range-size", Value: d.RangeSize, Usage: "rows per range query"},
			&cli.StringFlag{Name: "rand-type", Value: d.RandType, Usage: "id distribution: uniform, special, gaussian, pareto, zipfian"},
			&cli.Int64Flag{Name: "rand-seed", Value: d.RandSeed, Usage: "seed of the data and the workload's random values (same for every revision)"},
			&cli.IntFlag{Name: "repeats", Value: 6, Usage: "starting runs per revision (per side; blocks of good, bad and candidate for a midpoint)"},
			&cli.IntFlag{Name: "max-repeats", Value: 18, Usage: "run limit per decision; still undecided then: the commit is skipped"},
			&cli.StringFlag{Name: "threshold", Value: "5", Usage: "smallest relative change that counts, in percent (5 or 5%)"},
			&cli.Float64Flag{Name: "confidence", Value: 0.95, Usage: "probability that the whole answer is right; split over the session's decisions"},
			&cli.StringFlag{Name: "metric", Value: "tps", Usage: "tps, or cpu-per-txn (server CPU time per transaction: steadier on a noisy machine)"},
			&cli.BoolFlag{Name: "no-confirm", Usage: "do not confirm the first bad commit against its parent"},
			&cli.StringFlag{Name: "cmake-args", Usage: "extra CMake configure arguments, split like a shell would (\"-DPLUGIN_X=NO -DWITH_SSL=bundled\")"},
			&cli.IntFlag{Name: "build-jobs", DefaultText: "number of CPUs", Usage: "parallel build jobs"},
			&cli.StringFlag{Name: "state-dir", Usage: "builds, datadir snapshots and logs (default: the user's cache dir, per repository)"},
			&cli.StringFlag{Name: "json", Usage: "write the result as JSON to this file"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress lines on stderr"},
		},
		Action: startAction,
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr("%v (see perfbisect start --help)", err)
		},
	}
}

// usageErr makes an exit-2 error.
func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// parseSeconds reads a sysbench-style time: plain seconds ("3", "1.5") or a Go
// duration ("3s", "500ms").
func parseSeconds(flag, s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if !(f >= 0 && f <= 7*24*3600) { // also NaN
			return 0, usageErr("--%s %s: want seconds between 0 and one week", flag, s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, usageErr("--%s %q: want seconds (3) or a duration (3s, 500ms)", flag, s)
	}
	return d, nil
}

// parsePercent reads "5" or "5%" as 0.05.
func parsePercent(flag, s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || f <= 0 || f >= 100 {
		return 0, usageErr("--%s %q: want a percentage between 0 and 100, such as 5 or 5%%", flag, s)
	}
	return f / 100, nil
}

// defaultStateDir is the user's cache dir, one directory per repository path.
func defaultStateDir(repoDir string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", usageErr("no cache directory (%v): pass --state-dir", err)
	}
	abs, _ := filepath.Abs(repoDir)
	h := sha256.Sum256([]byte(abs))
	return filepath.Join(base, "perfbisect", filepath.Base(abs)+"-"+hex.EncodeToString(h[:])[:8]), nil
}

func startAction(c *cli.Context) error {
	ctx := c.Context
	progress := io.Writer(os.Stderr)
	if c.Bool("quiet") {
		progress = io.Discard
	}
	// Inputs first: every bad input is a one-line error and exit 2, before any build.
	if c.String("good") == "" || c.String("bad") == "" {
		return usageErr("--good and --bad are required: a revision without the regression and one with it (tag, branch, hash or version)")
	}
	if c.NArg() > 0 {
		return usageErr("unexpected argument %q (every input is a flag; see perfbisect start --help)", c.Args().First())
	}
	runTime, err := parseSeconds("time", c.String("time"))
	if err != nil {
		return err
	}
	warmup, err := parseSeconds("warmup", c.String("warmup"))
	if err != nil {
		return err
	}
	threshold, err := parsePercent("threshold", c.String("threshold"))
	if err != nil {
		return err
	}
	cmakeArgs, err := shellwords.Parse(c.String("cmake-args"))
	if err != nil {
		return usageErr("--cmake-args %q: %v", c.String("cmake-args"), err)
	}
	optionFile := c.String("my-cnf")
	if optionFile != "" {
		if err := serverctl.CheckOptionFile(optionFile); err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		optionFile, _ = filepath.Abs(optionFile)
	}
	if j := c.String("json"); j != "" {
		if err := report.CheckWritable(j); err != nil {
			return &exitError{code: exitUsage, err: err}
		}
	}
	bo := bench.DefaultOptions()
	bo.Workload = c.String("workload")
	bo.Threads, bo.Tables, bo.TableSize = c.Int("threads"), c.Int("tables"), c.Int("table-size")
	bo.Time, bo.Warmup = runTime, warmup
	bo.RangeSize = c.Int("range-size")
	bo.RandType = c.String("rand-type")
	bo.RandSeed = c.Int64("rand-seed")
	if err := bo.Validate(); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if _, err := exec.LookPath("cmake"); err != nil {
		return &exitError{code: exitUsage, err: build.ErrNoCMake}
	}
	repoDir := c.String("repo")
	repo, err := bisect.OpenRepo(repoDir)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	good, err := bisect.Resolve(repo, c.String("good"))
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("--good: %w", err)}
	}
	bad, err := bisect.Resolve(repo, c.String("bad"))
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("--bad: %w", err)}
	}
	commits, err := bisect.Range(repo, good, bad)
	if err != nil {
		code := exitFailure
		if errors.Is(err, bisect.ErrUsage) {
			code = exitUsage
		}
		return &exitError{code: code, err: err}
	}
	stateDir := c.String("state-dir")
	if stateDir == "" {
		root := repoDir // one state dir per repository, whichever subdirectory --repo names
		if wt, err := repo.Worktree(); err == nil {
			root = wt.Filesystem.Root()
		}
		if stateDir, err = defaultStateDir(root); err != nil {
			return err
		}
	}
	stateDir, _ = filepath.Abs(stateDir)
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return usageErr("--state-dir %s: %v", stateDir, err)
	}
	stateDir = reap.Canonical(stateDir) // one name per directory, for the lock and the reaping marks
	unlock, err := measure.LockStateDir(stateDir)
	if err != nil {
		return usageErr("%v", err)
	}
	defer unlock()
	// Holding the lock, any process still working for this state directory was
	// left by an earlier perfbisect that was killed: end it.
	for _, p := range reap.Kill(reap.Find(stateDir)) {
		fmt.Fprintf(os.Stderr, "perfbisect: killed pid %d left by an earlier perfbisect: %.120s\n", p.Pid, p.Command)
	}
	cfg := session.Config{
		Good: good, Bad: bad, Commits: commits,
		Repeats: c.Int("repeats"), MaxRepeats: c.Int("max-repeats"),
		Threshold: threshold, Confidence: c.Float64("confidence"), Metric: session.Metric(c.String("metric")),
		NoConfirm: c.Bool("no-confirm"),
	}
	if err := cfg.Validate(); err != nil {
		return &exitError{code: exitUsage, err: err}
	}

	subjects := func(h string) string { return bisect.Subject(repo, h) }
	table := &report.Table{W: os.Stdout, Subjects: subjects, Metric: cfg.Metric}
	builder := &build.Builder{Repo: repo, StateDir: stateDir, Recipe: build.Recipe{CMakeArgs: cmakeArgs, Jobs: c.Int("build-jobs")}, Log: progress}
	m := measure.New(measure.Config{Builder: builder, StateDir: stateDir, OptionFile: optionFile, Bench: bo, Log: progress})
	m.Tidy()
	var sess *session.Session
	var res *session.Result
	cfg.Logf = func(format string, args ...any) { fmt.Fprintf(progress, format+"\n", args...) }
	cfg.OnStep = func(st session.Step) { table.Step(st, res.Runs) }
	sess, err = session.New(cfg, m)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	fmt.Fprintf(progress, "bisecting %d commit(s) after good %.10s up to bad %.10s; state in %s\n", len(commits), good, bad, stateDir)
	res = sess.Result()
	_, runErr := sess.Run(ctx)
	if c.String("json") != "" {
		doc := report.NewDocument(res, cfg.Metric, subjects)
		if runErr != nil {
			doc.Result, doc.Error = "error", runErr.Error()
			if ctx.Err() != nil {
				doc.Error = "interrupted"
			}
		}
		if err := report.WriteJSON(c.String("json"), doc); err != nil {
			fmt.Fprintf(os.Stderr, "perfbisect: %v\n", err)
		}
	}
	if runErr != nil {
		var ee *session.EndpointError
		switch {
		case ctx.Err() != nil:
			return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted; no server left running (state in %s)", stateDir)}
		case errors.As(runErr, &ee), errors.Is(runErr, build.ErrNoCMake), errors.Is(runErr, serverctl.ErrOptionFile):
			return &exitError{code: exitUsage, err: runErr}
		default:
			return &exitError{code: exitFailure, err: runErr}
		}
	}
	report.Final(os.Stdout, res, subjects)
	switch res.Outcome {
	case session.Found:
		return nil
	case session.NoRegression:
		return &exitError{code: exitNoRegression}
	default:
		return &exitError{code: exitAmbiguous}
	}
}
