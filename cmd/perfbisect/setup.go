package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	humanize "github.com/dustin/go-humanize"
	git "github.com/go-git/go-git/v5"
	shellwords "github.com/mattn/go-shellwords"
	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/app"
	"github.com/perfbisect/perfbisect/internal/cliflag"
	"github.com/perfbisect/perfbisect/internal/diskfault"
	"github.com/perfbisect/perfbisect/serverctl"
)

// setup is what every measuring command has checked and opened before it
// builds anything: the inputs, the repository, the state directory (locked,
// leftovers reaped) and its store.
type setup struct {
	progress io.Writer
	// stdout is where tables and answers go (os.Stdout, wrapped by live when
	// both are the terminal); live is the progress bar on a terminal, nil
	// elsewhere or with --quiet.
	stdout     io.Writer
	live       *liveProgress
	repo       *git.Repository
	repoRoot   string // the work tree's root (or the --repo path of a bare repository)
	optionFile string // absolute, "" for none
	bench      bench.Options
	// driver is "builtin" or "sysbench" (--driver), sysbenchPath --sysbench-path.
	driver, sysbenchPath string
	// serverCPUs, clientCPUs: --server-cpus, --client-cpus.
	serverCPUs, clientCPUs serverctl.CPUList
	snapshotBudget         int64 // --snapshot-cache-size, bytes
	freshDatadir           bool  // --fresh-datadir
	recipe                 build.Recipe
	builds                 buildSettings  // the build flags
	policy                 session.Config // decision settings, without endpoints and commits
	stateDir               string
	store                  *store.Store
	unlock                 func()
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
		s.live = nil
	}
}

// close removes the progress bar and releases the store and the state
// directory's lock.
func (s *setup) close() {
	s.endProgress()
	if s.store != nil {
		s.store.Close()
	}
	if s.unlock != nil {
		s.unlock()
	}
}

// newSetup checks every measurement flag (a bad one is a one-line exit-2 error,
// before any build) and opens the repository. It does not touch the state
// directory; lockState does.
func newSetup(c *cli.Context) (*setup, error) {
	s := &setup{progress: os.Stderr, stdout: os.Stdout}
	switch {
	case c.Bool("quiet"):
		s.progress = io.Discard
	case isTerminal(os.Stderr):
		s.live = newLiveProgress(os.Stderr)
		s.progress = s.live.Writer(os.Stderr)
		if isTerminal(os.Stdout) {
			s.stdout = s.live.Writer(os.Stdout)
		}
	}
	runTime, err := cliflag.Seconds("time", c.String("time"))
	if err != nil {
		return nil, err
	}
	warmup, err := cliflag.Seconds("warmup", c.String("warmup"))
	if err != nil {
		return nil, err
	}
	threshold, err := cliflag.Percent("threshold", c.String("threshold"))
	if err != nil {
		return nil, err
	}
	confidence, err := cliflag.Confidence(c.String("confidence"))
	if err != nil {
		return nil, err
	}
	if s.builds, err = parseBuildFlags(c); err != nil {
		return nil, err
	}
	s.recipe = s.builds.recipe
	if f := c.String("my-cnf"); f != "" {
		if err := serverctl.CheckOptionFile(f); err != nil {
			return nil, app.With(app.Usage, err)
		}
		s.optionFile, _ = filepath.Abs(f)
		// Read it as the server will, before anything is built: a syntax error
		// stops here with its line; what the server would skip silently is said.
		// Its settings are checked once the revisions are known
		// (checkSettings).
		set, err := serverctl.ReadUserOptionFile(s.optionFile, nil)
		if err != nil {
			return nil, app.With(app.Usage, fmt.Errorf("--my-cnf: %w", err))
		}
		for _, w := range set.Warnings {
			fmt.Fprintln(s.progress, "perfbisect: note: --my-cnf: "+w)
		}
	}
	var improvement bool
	switch c.String("find") {
	case "regression":
	case "improvement":
		improvement = true
	default:
		return nil, usageErr("--find %q: want regression or improvement", c.String("find"))
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
			return nil, usageErr("--workload-options %q: %v", wo, err)
		}
		inv, err := bench.ParseArgsOver(bo, args)
		switch {
		case err != nil:
			return nil, usageErr("--workload-options: %v", err)
		case len(inv.ConnOptions) > 0:
			return nil, usageErr("--workload-options: %s: perfbisect connects to the server it starts; leave the connection options out", strings.Join(inv.ConnOptions, " "))
		case inv.Command != "":
			return nil, usageErr("--workload-options: %q: perfbisect prepares and runs by itself; leave the command out", inv.Command)
		}
		bo = inv.Options
		for _, n := range inv.Notes {
			fmt.Fprintln(s.progress, "perfbisect: note: "+n)
		}
	}
	if err := bo.Validate(); err != nil {
		return nil, app.With(app.Usage, err)
	}
	s.bench = bo
	switch s.driver, s.sysbenchPath = c.String("driver"), c.String("sysbench-path"); s.driver {
	case "builtin", "built-in":
		s.driver = "builtin"
	case "sysbench":
		if err := bench.SysbenchSupports(bo); err != nil {
			return nil, usageErr("--driver sysbench: %v", err)
		}
		if _, err := bench.SysbenchVersion(c.Context, s.sysbenchPath); err != nil {
			return nil, usageErr("--driver sysbench: %v", err)
		}
	default:
		return nil, usageErr("--driver %q: want builtin or sysbench", s.driver)
	}
	for _, f := range []struct {
		name string
		dst  *serverctl.CPUList
	}{{"server-cpus", &s.serverCPUs}, {"client-cpus", &s.clientCPUs}} {
		if *f.dst, err = serverctl.ParseCPUList(c.String(f.name)); err != nil {
			return nil, usageErr("--%s: %v", f.name, err)
		}
	}
	if b, err := humanize.ParseBytes(c.String("snapshot-cache-size")); err != nil || b == 0 || b > 1<<62 {
		return nil, usageErr("--snapshot-cache-size %q: want a size such as 500MiB or 20GB", c.String("snapshot-cache-size"))
	} else {
		s.snapshotBudget = int64(b)
	}
	s.freshDatadir = c.Bool("fresh-datadir")
	if s.serverCPUs.Overlaps(s.clientCPUs) {
		fmt.Fprintf(s.progress, "perfbisect: note: --server-cpus %s and --client-cpus %s share CPUs: the client takes CPU time from the server it measures\n", s.serverCPUs, s.clientCPUs)
	}
	s.policy = session.Config{
		Repeats: c.Int("repeats"), MaxRepeats: c.Int("max-repeats"),
		Threshold: threshold, Confidence: confidence, Metric: session.Metric(c.String("metric")),
		Improvement: improvement,
	}
	if err := s.policy.Validate(); err != nil { // every command's decision flags, before anything is built
		return nil, app.With(app.Usage, err)
	}
	s.repo, err = bisect.OpenRepo(c.String("repo"))
	if err != nil {
		return nil, app.With(app.Usage, err)
	}
	s.repoRoot, _ = filepath.Abs(c.String("repo"))
	if wt, err := s.repo.Worktree(); err == nil {
		s.repoRoot = wt.Filesystem.Root() // one state dir per repository, whichever subdirectory --repo names
	}
	return s, nil
}

// workloadSummary describes the workload and its driver in one line, for
// reports.
func (s *setup) workloadSummary() string {
	if s.driver == "sysbench" {
		return s.bench.Summary() + ", run by sysbench"
	}
	return s.bench.Summary() + ", built-in"
}

// lockState takes the state directory's lock, ends processes an earlier,
// killed perfbisect left working for it, and opens the store.
func (s *setup) lockState(c *cli.Context) error {
	dir, err := app.MakeStateDir(c.String("state-dir"), s.repoRoot)
	if err != nil {
		return err
	}
	s.stateDir = dir
	unlock, err := app.LockAndReap(dir, os.Stderr)
	if err != nil {
		return err
	}
	s.unlock = unlock
	if s.store, err = store.Open(dir); err != nil {
		return app.With(app.Failure, err)
	}
	return nil
}

// measurer returns the real Measurer for this setup; its builds are recorded
// in the store under the session id() returns (called at each build).
func (s *setup) measurer(id func() int64) *measure.Measurer {
	builder := s.builds.builder(s.repo, s.stateDir, s.progress, s.live)
	onBuild := func(b measure.BuildRecord) {
		err := s.store.AddBuild(id(), store.Build{Commit: b.Commit, Recipe: b.Recipe, Prefix: b.Prefix, Seconds: b.Duration.Seconds(),
			Flavor: b.Flavor, Version: b.Version, Error: b.Error})
		if err != nil {
			printError(err)
		}
	}
	m := measure.New(measure.Config{Builder: builder, StateDir: s.stateDir, OptionFile: s.optionFile, Bench: s.bench, Log: s.progress, OnBuild: onBuild,
		Driver: s.driver, SysbenchPath: s.sysbenchPath, ServerCPUs: s.serverCPUs, ClientCPUs: s.clientCPUs,
		SnapshotBudget: s.snapshotBudget, FreshDatadir: s.freshDatadir})
	m.Tidy()
	return m
}

// storeSession wires cfg to the store's session id() (called at each write:
// start stores its session only once the session is valid): live events are
// appended from sequence number firstEvent on, steps from firstStep on (and
// passed to also when set), progress lines go to the progress writer. It
// returns the number of steps stored so far (for a Diverged that truncates).
func (s *setup) storeSession(cfg *session.Config, id func() int64, firstEvent, firstStep int, also func(session.Step)) (steps func() int) {
	n := firstStep
	cfg.Record = func(seq int, e session.Event) error {
		err := s.store.Append(id(), firstEvent+seq, e)
		if err == nil && s.live != nil && e.Kind == session.EventRun {
			s.live.Run(e.Commit)
		}
		return err
	}
	if s.live != nil {
		cfg.OnEstimate = s.live.Estimate
	}
	cfg.OnStep = func(st session.Step) {
		if err := s.store.AddStep(id(), n, string(st.Role), st.Commit, st.Verdict, st); err != nil {
			printError(err)
		}
		n++
		if also != nil {
			also(st)
		}
	}
	cfg.Logf = func(format string, args ...any) { fmt.Fprintf(s.progress, format+"\n", args...) }
	return func() int { return n }
}

// identity lists everything that shapes a session's answer, by name: the
// endpoints, the decision policy, the workload, the build recipe and the
// option file's content. Two sessions with equal identities may share stored
// runs; a difference is shown to the user by name.
func (s *setup) identity(good, bad string, extra map[string]string) store.Identity {
	id := store.Identity{
		"good": good, "bad": bad,
		"repeats":     fmt.Sprint(s.policy.Repeats),
		"max-repeats": fmt.Sprint(s.policy.MaxRepeats),
		"threshold":   fmt.Sprint(s.policy.Threshold),
		"confidence":  fmt.Sprint(s.policy.Confidence),
		"metric":      string(s.policy.Metric),
		"find":        map[bool]string{false: "regression", true: "improvement"}[s.policy.Improvement],
		"recipe":      s.recipe.Hash(),
		"my-cnf":      s.optionFile,
	}
	// The workload as one value (for matching runs of earlier sessions) and
	// field by field (so that a refusal names the flag that changed).
	b, _ := json.Marshal(s.bench)
	id["workload"] = string(b)
	if s.driver != "builtin" {
		id["driver"] = s.driver
	}
	if s.freshDatadir {
		id["fresh-datadir"] = "true"
	}
	// Placement changes the numbers: runs with another one are not reused.
	if !s.serverCPUs.IsZero() {
		id["server-cpus"] = s.serverCPUs.String()
	}
	if !s.clientCPUs.IsZero() {
		id["client-cpus"] = s.clientCPUs.String()
	}
	var fields map[string]any
	_ = json.Unmarshal(b, &fields)
	for k, v := range fields {
		id["workload "+k] = fmt.Sprint(v)
	}
	if s.optionFile != "" {
		// The file and every file it includes: what the server will read.
		d, err := serverctl.OptionFileDigest(s.optionFile)
		if err != nil {
			d = "unreadable: " + err.Error()
		}
		id["my-cnf content"] = d[:min(16, len(d))]
	}
	for k, v := range extra {
		id[k] = v
	}
	return id
}

// exitFor maps a session's error to an exit error of start.
func exitFor(err error, interrupted bool, stateDir, repoRoot string) error {
	var ee *session.EndpointError
	where := app.Where(stateDir, repoRoot)
	switch {
	case interrupted:
		return app.With(app.Interrupted, fmt.Errorf("interrupted; no server left running. Continue with: perfbisect resume %s (or the same start command); perfbisect status %s shows where it stands", where, where))
	case errors.As(err, &ee), errors.Is(err, build.ErrNoCMake), errors.Is(err, serverctl.ErrOptionFile):
		return app.With(app.Usage, err)
	default:
		if stateDir != "" {
			if de := diskfault.Check(stateDir, err); de != nil {
				err = de // a store write on a full disk, say
			}
		}
		return app.With(app.Failure, fmt.Errorf("%w (the session is kept: perfbisect resume %s continues it)", err, where))
	}
}

// buildSettings are the build flags, checked.
type buildSettings struct {
	recipe  build.Recipe
	timeout time.Duration // --build-timeout, 0 none
	budget  int64         // --build-cache-size, bytes
	verbose bool          // -v: raw build output on stderr
	// retryFailed: --retry-failed-builds.
	retryFailed bool
}

// parseBuildFlags checks the build flags (a bad one is an exit-2 error naming
// it) and that the tools they need are installed.
func parseBuildFlags(c *cli.Context) (buildSettings, error) {
	var b buildSettings
	if c.Int("build-jobs") < 0 {
		return b, usageErr("--build-jobs %d: want a positive number of parallel build jobs (0 or none: one per CPU)", c.Int("build-jobs"))
	}
	cmakeArgs, err := shellwords.Parse(c.String("cmake-args"))
	if err != nil {
		return b, usageErr("--cmake-args %q: %v", c.String("cmake-args"), err)
	}
	b.recipe = build.Recipe{Preset: c.String("preset"), CMakeArgs: cmakeArgs, Jobs: c.Int("build-jobs"),
		BuildCmd: strings.TrimSpace(c.String("build-cmd")), InstallCmd: strings.TrimSpace(c.String("install-cmd")),
		NoCcache: c.Bool("no-ccache"), DistccHosts: strings.TrimSpace(c.String("distcc-hosts"))}
	if _, err := build.PresetFor(b.recipe.Preset, build.Tree{}); err != nil {
		return b, usageErr("--preset: %v", err)
	}
	if b.recipe.BuildCmd != "" && (len(cmakeArgs) > 0 || c.IsSet("preset") && b.recipe.Preset != "none") {
		return b, usageErr("--build-cmd replaces CMake: leave out --cmake-args and --preset (the command has JOBS, SRC, BUILD_DIR, PREFIX and DESTDIR in its environment)")
	}
	if b.recipe.BuildCmd == "" {
		if _, err := exec.LookPath("cmake"); err != nil {
			return b, app.With(app.Usage, build.ErrNoCMake)
		}
	}
	if b.recipe.DistccHosts != "" {
		if _, err := exec.LookPath("distcc"); err != nil {
			return b, usageErr("--distcc-hosts: distcc is not installed (apt-get install distcc)")
		}
	}
	if t := c.String("build-timeout"); t != "" {
		if b.timeout, err = cliflag.Seconds("build-timeout", t); err != nil {
			return b, err
		}
		if b.timeout < time.Second {
			return b, usageErr("--build-timeout %s: want at least one second (90m, 3600)", t)
		}
	}
	size, err := humanize.ParseBytes(c.String("build-cache-size"))
	if err != nil || size < 1<<20 || size > 1<<62 {
		return b, usageErr("--build-cache-size %q: want a size of at least 1MiB, such as 20GiB or 500MB", c.String("build-cache-size"))
	}
	b.budget = int64(size)
	b.verbose = c.Bool("verbose")
	b.retryFailed = c.Bool("retry-failed-builds")
	return b, nil
}

// checkSettings reads the user's option file as the servers of commits (the
// endpoints first, then every revision that may be measured) will read it,
// before anything is built: with the option groups of each tree's flavor and
// version (read from the tree; a tree that states neither is read as a
// MariaDB one's), and refuses with the file and line what no server option
// can fix (serverctl.CheckSettings): exit 2. Of a long range, 300 trees
// spread over it are read (a series changes its version file rarely).
// Nothing without --my-cnf.
func (s *setup) checkSettings(commits ...string) error {
	if s.optionFile == "" {
		return nil
	}
	if maxTrees := 300; len(commits) > maxTrees {
		sampled := commits[:2:2] // the endpoints
		for i := 0; i < maxTrees; i++ {
			sampled = append(sampled, commits[2+i*(len(commits)-2)/maxTrees])
		}
		commits = sampled
	}
	seen := map[string]bool{}
	var groups []string
	for _, c := range commits {
		t, err := build.InspectTree(s.repo, c)
		if err != nil {
			return err
		}
		flavor := serverctl.Flavor(t.Flavor)
		if flavor == "" {
			flavor = serverctl.MariaDB
		}
		for _, g := range serverctl.GroupsFor(flavor, t.Version) {
			if !seen[g] {
				seen[g] = true
				groups = append(groups, g)
			}
		}
	}
	set, err := serverctl.ReadUserOptionFile(s.optionFile, groups)
	if err == nil {
		err = serverctl.CheckSettings(set)
	}
	if err != nil {
		return app.With(app.Usage, fmt.Errorf("--my-cnf: %w", err))
	}
	return nil
}

// builder returns the Builder for these settings: progress lines to log, the
// build's percentage on the live bar when there is one (else a line per
// quarter), raw output on stderr with -v.
func (b buildSettings) builder(repo *git.Repository, stateDir string, log io.Writer, live *liveProgress) *build.Builder {
	bl := &build.Builder{Repo: repo, StateDir: stateDir, Recipe: b.recipe, Log: log, Timeout: b.timeout, CacheBudget: b.budget, RetryFailed: b.retryFailed,
		Lock: func(ctx context.Context, what string) (func(), error) {
			return measure.MachineLock(ctx, what, stateDir, log)
		}}
	switch {
	case b.verbose:
		bl.Raw = log // through the bar's writer when there is one
		if log == nil || log == io.Discard {
			bl.Raw = os.Stderr // -v wins over --quiet
		}
	case live != nil:
		bl.Progress = live.Build
	case log != nil && log != io.Discard:
		bl.Progress = buildProgressLines(log)
	}
	return bl
}
