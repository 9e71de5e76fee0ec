package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	humanize "github.com/dustin/go-humanize"
	shellwords "github.com/mattn/go-shellwords"
	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/app"
	"github.com/perfbisect/perfbisect/internal/cliflag"
	"github.com/perfbisect/perfbisect/serverctl"
)

// setup is app.Setup with the terminal: stdout (where tables and answers
// go: os.Stdout, wrapped by live when both are the terminal) and live (the
// progress bar on a terminal, nil elsewhere or with --quiet).
type setup struct {
	*app.Setup
	stdout io.Writer
	live   *liveProgress
}

// color reports whether tables on stdout may use colours: stdout is a
// terminal and NO_COLOR (no-color.org) is not set.
func (s *setup) color() bool {
	return isTerminal(os.Stdout) && os.Getenv("NO_COLOR") == ""
}

// endProgress removes the progress bar for good (before a final report).
func (s *setup) endProgress() {
	if s.live != nil {
		s.live.Close()
		s.live, s.Setup.Live = nil, nil
	}
}

// close removes the progress bar and releases the store and the state
// directory's lock.
func (s *setup) close() {
	s.endProgress()
	s.Setup.Close()
}

// newTerminalSetup is a setup whose progress goes to stderr (nowhere when
// quiet), through a progress bar when stderr is a terminal, and whose
// answers go to stdout (through the bar when both are the terminal).
func newTerminalSetup(quiet bool) *setup {
	s := &setup{Setup: &app.Setup{Log: os.Stderr}, stdout: os.Stdout}
	switch {
	case quiet:
		s.Log = io.Discard
	case isTerminal(os.Stderr):
		s.live = newLiveProgress(os.Stderr)
		s.Setup.Live = s.live // only when there is one: a nil *liveProgress is not a nil Live
		s.Log = s.live.Writer(os.Stderr)
		if isTerminal(os.Stdout) {
			s.stdout = s.live.Writer(os.Stdout)
		}
	}
	return s
}

// newSetup checks every measurement flag (a bad one is a one-line exit-2 error,
// before any build) and opens the repository. It does not touch the state
// directory; lockState does.
func newSetup(c *cli.Context) (*setup, error) {
	s := newTerminalSetup(c.Bool("quiet"))
	threshold, err := cliflag.Percent("threshold", c.String("threshold"))
	if err != nil {
		return nil, err
	}
	confidence, err := cliflag.Confidence(c.String("confidence"))
	if err != nil {
		return nil, err
	}
	if s.Build, err = parseBuildFlags(c); err != nil {
		return nil, err
	}
	if s.OptionFile, err = optionFileOf(c, s.Log); err != nil {
		return nil, err
	}
	var improvement bool
	switch c.String("find") {
	case "regression":
	case "improvement":
		improvement = true
	default:
		return nil, usageErr("--find %q: want regression or improvement", c.String("find"))
	}
	if s.Bench, err = workloadOf(c, s.Log); err != nil {
		return nil, err
	}
	if s.Driver, s.SysbenchPath, err = driverOf(c, s.Bench); err != nil {
		return nil, err
	}
	if err := s.placementOf(c); err != nil {
		return nil, err
	}
	s.Policy = session.Config{
		Repeats: c.Int("repeats"), MaxRepeats: c.Int("max-repeats"),
		Threshold: threshold, Confidence: confidence, Metric: session.Metric(c.String("metric")),
		Improvement: improvement,
	}
	if err := s.Policy.Validate(); err != nil { // every command's decision flags, before anything is built
		return nil, app.With(app.Usage, err)
	}
	s.Repo, err = bisect.OpenRepo(c.String("repo"))
	if err != nil {
		return nil, app.With(app.Usage, err)
	}
	s.RepoRoot, _ = filepath.Abs(c.String("repo"))
	if wt, err := s.Repo.Worktree(); err == nil {
		s.RepoRoot = wt.Filesystem.Root() // one state dir per repository, whichever subdirectory --repo names
	}
	return s, nil
}

// optionFileOf checks --my-cnf and reads it as the server will, before
// anything is built: a syntax error stops here with its line; what the
// server would skip silently is said on log. Its settings are checked once
// the revisions are known (app.Setup.CheckSettings). It returns the file's
// absolute path, "" for none.
func optionFileOf(c *cli.Context, log io.Writer) (string, error) {
	f := c.String("my-cnf")
	if f == "" {
		return "", nil
	}
	if err := serverctl.CheckOptionFile(f); err != nil {
		return "", app.With(app.Usage, err)
	}
	abs, _ := filepath.Abs(f)
	set, err := serverctl.ReadUserOptionFile(abs, nil)
	if err != nil {
		return "", app.With(app.Usage, fmt.Errorf("--my-cnf: %w", err))
	}
	for _, w := range set.Warnings {
		fmt.Fprintln(log, "perfbisect: note: --my-cnf: "+w)
	}
	return abs, nil
}

// workloadOf reads the workload flags (and sysbench's own options in
// --workload-options, their notes said on log) into checked options.
func workloadOf(c *cli.Context, log io.Writer) (bench.Options, error) {
	runTime, err := cliflag.Seconds("time", c.String("time"))
	if err != nil {
		return bench.Options{}, err
	}
	warmup, err := cliflag.Seconds("warmup", c.String("warmup"))
	if err != nil {
		return bench.Options{}, err
	}
	bo := bench.DefaultOptions()
	bo.Workload = c.String("workload")
	bo.Threads, bo.Tables, bo.TableSize = c.Int("threads"), c.Int("tables"), c.Int("table-size")
	bo.Time, bo.Warmup = runTime, warmup
	bo.RangeSize = c.Int("range-size")
	bo.RandType = c.String("rand-type")
	bo.RandSeed = c.Int64("rand-seed")
	if wo := c.String("workload-options"); wo != "" {
		args, err := shellwords.Parse(wo)
		if err != nil {
			return bench.Options{}, usageErr("--workload-options %q: %v", wo, err)
		}
		inv, err := bench.ParseArgsOver(bo, args)
		switch {
		case err != nil:
			return bench.Options{}, usageErr("--workload-options: %v", err)
		case len(inv.ConnOptions) > 0:
			return bench.Options{}, usageErr("--workload-options: %s: perfbisect connects to the server it starts; leave the connection options out", strings.Join(inv.ConnOptions, " "))
		case inv.Command != "":
			return bench.Options{}, usageErr("--workload-options: %q: perfbisect prepares and runs by itself; leave the command out", inv.Command)
		}
		bo = inv.Options
		for _, n := range inv.Notes {
			fmt.Fprintln(log, "perfbisect: note: "+n)
		}
	}
	if err := bo.Validate(); err != nil {
		return bench.Options{}, app.With(app.Usage, err)
	}
	return bo, nil
}

// driverOf reads --driver (builtin or sysbench: then sysbench must run
// these options and be installed) and --sysbench-path.
func driverOf(c *cli.Context, bo bench.Options) (driver, path string, err error) {
	switch driver, path = c.String("driver"), c.String("sysbench-path"); driver {
	case "builtin", "built-in":
		driver = "builtin"
	case "sysbench":
		if err := bench.SysbenchSupports(bo); err != nil {
			return "", "", usageErr("--driver sysbench: %v", err)
		}
		if _, err := bench.SysbenchVersion(c.Context, path); err != nil {
			return "", "", usageErr("--driver sysbench: %v", err)
		}
	default:
		return "", "", usageErr("--driver %q: want builtin or sysbench", driver)
	}
	return driver, path, nil
}

// placementOf reads where the server and the client run (--server-cpus,
// --client-cpus) and the datadir snapshot settings.
func (s *setup) placementOf(c *cli.Context) error {
	var err error
	for _, f := range []struct {
		name string
		dst  *serverctl.CPUList
	}{{"server-cpus", &s.ServerCPUs}, {"client-cpus", &s.ClientCPUs}} {
		if *f.dst, err = serverctl.ParseCPUList(c.String(f.name)); err != nil {
			return usageErr("--%s: %v", f.name, err)
		}
	}
	if b, err := humanize.ParseBytes(c.String("snapshot-cache-size")); err != nil || b == 0 || b > 1<<62 {
		return usageErr("--snapshot-cache-size %q: want a size such as 500MiB or 20GB", c.String("snapshot-cache-size"))
	} else {
		s.SnapshotBudget = int64(b)
	}
	s.FreshDatadir = c.Bool("fresh-datadir")
	if s.StartTimeout, err = cliflag.Seconds("start-timeout", c.String("start-timeout")); err != nil {
		return err
	}
	if s.StartTimeout < time.Second {
		return usageErr("--start-timeout %s: want at least one second (3m, 180)", c.String("start-timeout"))
	}
	if s.ServerCPUs.Overlaps(s.ClientCPUs) {
		fmt.Fprintf(s.Log, "perfbisect: note: --server-cpus %s and --client-cpus %s share CPUs: the client takes CPU time from the server it measures\n", s.ServerCPUs, s.ClientCPUs)
	}
	return nil
}

// parseBuildFlags checks the build flags (a bad one is an exit-2 error naming
// it) and that the tools they need are installed.
func parseBuildFlags(c *cli.Context) (app.BuildSettings, error) {
	var b app.BuildSettings
	if c.Int("build-jobs") < 0 {
		return b, usageErr("--build-jobs %d: want a positive number of parallel build jobs (0 or none: one per CPU)", c.Int("build-jobs"))
	}
	cmakeArgs, err := shellwords.Parse(c.String("cmake-args"))
	if err != nil {
		return b, usageErr("--cmake-args %q: %v", c.String("cmake-args"), err)
	}
	b.Recipe = build.Recipe{Preset: c.String("preset"), CMakeArgs: cmakeArgs, Jobs: c.Int("build-jobs"),
		BuildCmd: strings.TrimSpace(c.String("build-cmd")), InstallCmd: strings.TrimSpace(c.String("install-cmd")),
		NoCcache: c.Bool("no-ccache"), DistccHosts: strings.TrimSpace(c.String("distcc-hosts"))}
	if _, err := build.PresetFor(b.Recipe.Preset, build.Tree{}); err != nil {
		return b, usageErr("--preset: %v", err)
	}
	if b.Recipe.BuildCmd != "" && (len(cmakeArgs) > 0 || c.IsSet("preset") && b.Recipe.Preset != "none") {
		return b, usageErr("--build-cmd replaces CMake: leave out --cmake-args and --preset (the command has JOBS, SRC, BUILD_DIR, PREFIX and DESTDIR in its environment)")
	}
	if b.Recipe.BuildCmd == "" {
		if _, err := exec.LookPath("cmake"); err != nil {
			return b, app.With(app.Usage, build.ErrNoCMake)
		}
	}
	if b.Recipe.DistccHosts != "" {
		if _, err := exec.LookPath("distcc"); err != nil {
			return b, usageErr("--distcc-hosts: distcc is not installed (apt-get install distcc)")
		}
	}
	if t := c.String("build-timeout"); t != "" {
		if b.Timeout, err = cliflag.Seconds("build-timeout", t); err != nil {
			return b, err
		}
		if b.Timeout < time.Second {
			return b, usageErr("--build-timeout %s: want at least one second (90m, 3600)", t)
		}
	}
	size, err := humanize.ParseBytes(c.String("build-cache-size"))
	if err != nil || size < 1<<20 || size > 1<<62 {
		return b, usageErr("--build-cache-size %q: want a size of at least 1MiB, such as 20GiB or 500MB", c.String("build-cache-size"))
	}
	b.Budget = int64(size)
	b.Verbose = c.Bool("verbose")
	b.RetryFailed = c.Bool("retry-failed-builds")
	return b, nil
}
