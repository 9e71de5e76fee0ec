package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	humanize "github.com/dustin/go-humanize"
	shellwords "github.com/mattn/go-shellwords"
	"golang.org/x/sys/unix"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bench/sysbench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/cliflag"
	"github.com/perfbisect/perfbisect/internal/spell"
	"github.com/perfbisect/perfbisect/internal/usage"
	"github.com/perfbisect/perfbisect/serverctl"
)

// SetupRequest is what a measuring command (start, compare, scan, run) was
// given, as typed: the settings Configure checks and turns into a Setup.
// Durations are seconds or Go durations ("10", "10s"), percentages "5" or
// "5%", sizes "500MiB" or "20GB"; the names in its errors are the command
// line's (usage.Errorf's {setting} placeholders).
type SetupRequest struct {
	Repo string // the server's git source tree
	// MyCnf are the user's option files as given: none, or one; with
	// MyCnfPerSide (compare) also one per side, in the sides' order, and
	// Repo need not be a repository until a side is a revision of it.
	MyCnf        []string
	MyCnfPerSide bool
	// Reports are the files the command writes its reports to, by setting
	// name ("json", "html", "output"; "" for none): each must be writable
	// (html is checked by the command, with its own rules) and none may be
	// an option file of MyCnf.
	Reports map[string]string

	Workload WorkloadRequest
	// Driver is builtin (built-in, too) or sysbench, for the OLTP
	// workloads (a script always runs under sysbench); SysbenchPath the
	// sysbench binary ("" for the one in PATH).
	Driver, SysbenchPath string

	// ServerCPUs and ClientCPUs are CPU lists as for taskset -c ("" for all).
	ServerCPUs, ClientCPUs string
	SnapshotCacheSize      string
	FreshDatadir           bool
	StartTimeout           string

	Repeats, MaxRepeats   int
	Threshold, Confidence string
	// Metric is what runs are judged by; MetricSet says it was given (else
	// the workload's headline: tpmc for tpcc).
	Metric    string
	MetricSet bool
	Find      string // regression or improvement
	// Search is start's search as typed; nil for the commands that do not
	// search (compare, scan, run, explain).
	Search *SearchRequest

	Build BuildRequest
	// Runners are the runner hosts start takes its runs on, as given
	// (runner.ParseHost); none: this machine.
	Runners []string
}

// SearchRequest is start's search as typed: the search (bayes or
// classic), commits per round (1 to 16) and the probabilistic search's run
// budget (0 for the default). SearchSet, ConfidenceSet and MaxRepeatsSet say
// the user chose these: otherwise the search's own defaults apply
// (searchDefaults), and a session begun by a perfbisect without the
// probabilistic search resumes as it began (asBegun).
type SearchRequest struct {
	Search                                  string
	Jobs, MaxRuns                           int
	SearchSet, ConfidenceSet, MaxRepeatsSet bool
}

// WorkloadRequest is the workload as typed: sysbench's settings, and any
// others on a sysbench command line in Options (which win over the fields).
// Name is an OLTP workload (bench.Workloads), tpcc, a SQL workload file or
// a sysbench Lua script (bench.WorkloadKind says which). A script takes
// Threads, Time, Warmup and RandSeed always, and Tables, TableSize,
// RangeSize and RandType only when Given names them (as its own options);
// a SQL workload file takes them all.
type WorkloadRequest struct {
	Name                       string
	Threads, Tables, TableSize int
	Time, Warmup               string
	RangeSize                  int
	RandType                   string
	RandSeed                   int64
	Options                    string // "--point-selects=1 --skip-trx=on", or a 0.4 line
	Warehouses                 int    // TPC-C's scale (tpcc)
	// Given names the settings given on the command line ("tables", ...).
	Given []string
}

// BuildRequest are the build settings as typed (start, compare, scan,
// run, build). PresetSet says --preset was given (a preset other than none
// then conflicts with BuildCmd).
type BuildRequest struct {
	Preset                   string
	PresetSet                bool
	CMakeArgs                string // split as a shell would
	BuildCmd, InstallCmd     string
	Jobs                     int // 0: one per CPU
	Timeout, CacheSize       string
	DistccHosts              string
	Icecc                    bool   // compile on this machine's icecream farm
	SharedCache              string // a shared build cache: a directory or an http(s) URL
	Binaries                 string // a directory of the vendors' binary tarballs (start)
	NoCcache, Verbose, Retry bool
	Layouts                  string // code layouts per build: "run", or 1 (the build's own) to 64; "": not given, ResolveLayouts decides
}

// Configure checks every setting of req (a bad one is a usage error naming
// it, before anything is built; notes on what the server or sysbench would
// do otherwise go to s.Log) and opens the repository. It does not touch the
// state directory; Lock does.
func (s *Setup) Configure(ctx context.Context, req SetupRequest) error {
	threshold, err := cliflag.Percent("threshold", req.Threshold)
	if err != nil {
		return err
	}
	confidence, err := cliflag.Confidence(req.Confidence)
	if err != nil {
		return err
	}
	if s.Build, err = ParseBuildSettings(req.Build); err != nil {
		return err
	}
	for name, out := range req.Reports {
		if out != "" && name != "html" {
			if err := report.CheckWritable(name, out); err != nil {
				return With(Usage, err)
			}
		}
		for _, cnf := range req.MyCnf {
			if out != "" && sameFile(out, cnf) {
				return usageError("%s %s is the option file {my-cnf} %s: a report never overwrites an input; name another file", usage.Setting(name), out, cnf)
			}
		}
	}
	switch n := len(req.MyCnf); {
	case n > 1 && !req.MyCnfPerSide:
		return usageError("{my-cnf} given %d times (%s): a bisection takes one option file (compare takes one per side)", n, strings.Join(req.MyCnf, ", "))
	case n > 1:
		for _, f := range req.MyCnf {
			of, err := optionFile(f, s.Log)
			if err != nil {
				return err
			}
			s.SideOptionFiles = append(s.SideOptionFiles, of)
		}
	case n == 1:
		if s.OptionFile, err = optionFile(req.MyCnf[0], s.Log); err != nil {
			return err
		}
	}
	var improvement bool
	switch req.Find {
	case "regression":
	case "improvement":
		improvement = true
	default:
		return usageError("{find} %q: want regression or improvement", req.Find)
	}
	if s.Workload, err = workload(ctx, req.Workload, req.Driver, req.SysbenchPath, s.Log); err != nil {
		return err
	}
	if err := s.placement(req); err != nil {
		return err
	}
	metric := req.Metric
	switch offered := s.Workload.Metrics(); {
	case !req.MetricSet:
		metric = offered[0]
	case !slices.Contains(offered, metric):
		return usageError("{metric} %s: %s does not measure it; its runs are judged by %s", metric, s.Workload.Name(), strings.Join(offered, ", "))
	}
	s.Policy = session.Config{
		Repeats: req.Repeats, MaxRepeats: req.MaxRepeats,
		Threshold: threshold, Confidence: confidence, Metric: session.Metric(metric),
		Improvement: improvement,
	}
	// Every command's decision settings, before anything is built; start's
	// as its search takes them.
	if err := s.decideSearch(req.Search); err != nil {
		return err
	}
	s.req = req
	if err := s.parseRunners(req); err != nil {
		return err
	}
	s.Repo, err = bisect.OpenRepo(req.Repo)
	if err != nil && req.MyCnfPerSide {
		s.repoErr = With(Usage, err) // compare's installed servers need no tree: said when a revision does
		s.Build.ResolveLayouts(nil, false, s.Log, s.Log)
		return nil
	}
	if err != nil {
		return With(Usage, err)
	}
	s.Build.ResolveLayouts(s.Repo, len(s.Runners) > 0, s.Log, s.Log)
	s.RepoRoot, _ = filepath.Abs(req.Repo)
	if wt, err := s.Repo.Worktree(); err == nil {
		s.RepoRoot = wt.Filesystem.Root() // one state dir per repository, whichever subdirectory Repo names
	}
	return nil
}

// sameFile reports whether paths a and b name the same file (as absolute
// paths).
func sameFile(a, b string) bool {
	x, _ := filepath.Abs(a)
	y, _ := filepath.Abs(b)
	return x == y
}

// usageError is a usage outcome whose message names settings with {name}.
func usageError(format string, args ...any) error {
	return With(Usage, usage.Errorf(format, args...))
}

// optionFile checks the option file f and reads it as the server will,
// once, before anything is built: a syntax error stops here with its line;
// what the server would skip silently is said on log. Its settings are
// checked once the revisions are known (Setup.CheckSettings). "" gives the
// zero OptionFile.
func optionFile(f string, log io.Writer) (serverctl.OptionFile, error) {
	of, err := serverctl.LoadOptionFile(f)
	if err != nil {
		return of, usageError("{my-cnf}: %w", err)
	}
	for _, w := range of.Warnings {
		fmt.Fprintf(log, "perfbisect: note: %s: %s\n", usage.Flag("my-cnf"), w)
	}
	return of, nil
}

// MinWindow is the shortest measured window (--time) a run may have: over
// less, a run counts a handful of transactions and its tps is the clock's
// granularity more than the server's speed.
const MinWindow = 100 * time.Millisecond

// workload reads the workload: an OLTP workload (its sysbench options in
// w.Options, their notes said on log) run by the driver, or another kind
// (custom): TPC-C, a SQL workload file, a sysbench script.
func workload(ctx context.Context, w WorkloadRequest, driverName, sysbenchPath string, log io.Writer) (bench.Workload, error) {
	runTime, err := cliflag.Seconds("time", w.Time)
	if err != nil {
		return nil, err
	}
	if runTime < MinWindow {
		return nil, usageError("{time} %s: want a measured window of at least %g seconds (a run's tps is counted over it; 10 or more is usual)", w.Time, MinWindow.Seconds())
	}
	warmup, err := cliflag.Seconds("warmup", w.Warmup)
	if err != nil {
		return nil, err
	}
	switch driverName {
	case "builtin", "built-in", "sysbench":
	default:
		return nil, usageError("{driver} %q: want builtin or sysbench", driverName)
	}
	bo := bench.DefaultOptions()
	bo.Workload = w.Name
	bo.Threads, bo.Tables, bo.TableSize = w.Threads, w.Tables, w.TableSize
	bo.Time, bo.Warmup = runTime, warmup
	bo.RangeSize = w.RangeSize
	bo.RandType = w.RandType
	bo.RandSeed = w.RandSeed
	if slices.Contains(w.Given, "warehouses") && bench.WorkloadKind(w.Name) != bench.KindTPCC {
		return nil, usageError("{warehouses} is TPC-C's scale: give it with {workload} tpcc, not %s", w.Name)
	}
	if bench.WorkloadKind(w.Name) != bench.KindOLTP {
		return custom(ctx, w, bo, driverName, sysbenchPath)
	}
	// The flags alone first, so that an error names the flag or the
	// options it is in.
	if err := bo.Validate(); err != nil {
		return nil, With(Usage, err)
	}
	if wo := w.Options; wo != "" {
		args, err := shellwords.Parse(wo)
		if err != nil {
			return nil, usageError("{workload-options} %q: %v", wo, err)
		}
		inv, err := sysbench.ParseArgsOver(bo, args)
		switch {
		case err != nil:
			return nil, usageError("{workload-options}: %v", err)
		case len(inv.ConnOptions) > 0:
			return nil, usageError("{workload-options}: %s: perfbisect connects to the server it starts; leave the connection options out", strings.Join(inv.ConnOptions, " "))
		case inv.Command != "":
			return nil, usageError("{workload-options}: %q: perfbisect prepares and runs by itself; leave the command out", inv.Command)
		}
		bo = inv.Options
		for _, n := range inv.Notes {
			fmt.Fprintln(log, "perfbisect: note: "+n)
		}
		if err := bo.Validate(); err != nil {
			return nil, usageError("{workload-options}: %v", err)
		}
	}
	if driverName != "sysbench" {
		return bench.OLTP{Options: bo}, nil
	}
	if err := sysbench.Supports(bo); err != nil {
		return nil, usageError("{driver} sysbench: %v", err)
	}
	if _, err := sysbench.Version(ctx, sysbenchPath); err != nil {
		return nil, usageError("{driver} sysbench: %v", err)
	}
	return sysbench.OLTP{Options: bo, Sysbench: sysbench.Binary{Path: sysbenchPath}}, nil
}

// custom reads a workload that is not an OLTP one (bench.WorkloadKind): a
// SQL workload file, which takes the settings as they are, or a sysbench
// script, which takes the settings given as flags that are its own options
// (tables, table-size, range-size, rand-type) before w.Options.
func custom(ctx context.Context, w WorkloadRequest, bo bench.Options, driverName, sysbenchPath string) (bench.Workload, error) {
	kind := bench.WorkloadKind(w.Name)
	if kind == bench.KindScript {
		if _, err := sysbench.FindScript(w.Name, sysbenchPath); err != nil {
			if strings.ContainsAny(w.Name, "/.") {
				return nil, usageError("{workload}: %v", err)
			}
			scripts := sysbench.Scripts(sysbenchPath)
			hint := ""
			if near := spell.Nearest(w.Name, append(bench.Workloads(), scripts...)); near != "" {
				hint = fmt.Sprintf(" did you mean %s?", near)
			}
			return nil, usageError("{workload} %q: %v:%s (the OLTP workloads: %s; a SQL workload file: its path; a sysbench script: its path, or one of %s)", w.Name, bench.ErrUnknownWorkload, hint,
				strings.Join(bench.Workloads(), ", "), strings.Join(scripts, ", "))
		}
	}
	if slices.Contains(w.Given, "driver") && (kind == bench.KindScript) != (driverName == "sysbench") {
		what := map[string]string{bench.KindScript: "a sysbench script: sysbench runs it", bench.KindSQL: "a SQL workload file: the built-in engine runs it",
			bench.KindTPCC: "built in: the built-in engine runs it"}[kind]
		return nil, usageError("{workload} %s is %s, leave out {driver} %s", w.Name, what, driverName)
	}
	var args []string
	if kind == bench.KindTPCC {
		args = append(args, fmt.Sprintf("--warehouses=%d", w.Warehouses))
	}
	if kind == bench.KindScript {
		for _, f := range []struct {
			name  string
			value any
		}{{"tables", w.Tables}, {"table-size", w.TableSize}, {"range-size", w.RangeSize}, {"rand-type", w.RandType}} {
			if slices.Contains(w.Given, f.name) {
				args = append(args, fmt.Sprintf("--%s=%v", strings.ReplaceAll(f.name, "-", "_"), f.value))
			}
		}
	}
	more, err := shellwords.Parse(w.Options)
	if err != nil {
		return nil, usageError("{workload-options} %q: %v", w.Options, err)
	}
	cw, err := newCustom(ctx, w.Name, append(args, more...), bo, sysbench.Binary{Path: sysbenchPath})
	switch {
	case err == nil:
		return cw, nil
	case errors.Is(err, sysbench.ErrNoSysbench):
		return nil, usageError("{workload} %s: %v", w.Name, err)
	case kind == bench.KindTPCC && strings.Contains(err.Error(), "--warehouses"):
		return nil, usageError("{warehouses} %d: want a number of warehouses from 1 to 10000", w.Warehouses)
	case errors.Is(err, sysbench.ErrScript), errors.Is(err, bench.ErrSQLWorkload):
		return nil, usageError("{workload}: %w", err)
	default:
		return nil, usageError("{workload} %s {workload-options}: %w", w.Name, err)
	}
}

// placement reads where the server and the client run and the datadir
// snapshot settings.
func (s *Setup) placement(req SetupRequest) error {
	var err error
	for _, f := range []struct {
		name, value string
		dst         *serverctl.CPUList
	}{{"server-cpus", req.ServerCPUs, &s.ServerCPUs}, {"client-cpus", req.ClientCPUs, &s.ClientCPUs}} {
		if *f.dst, err = serverctl.ParseCPUList(f.value); err != nil {
			return usageError("%s: %v", usage.Setting(f.name), err)
		}
	}
	if b, err := humanize.ParseBytes(req.SnapshotCacheSize); err != nil || b == 0 || b > 1<<62 {
		return usageError("{snapshot-cache-size} %q: want a size such as 500MiB or 20GB", req.SnapshotCacheSize)
	} else {
		s.SnapshotBudget = int64(b)
	}
	s.FreshDatadir = req.FreshDatadir
	if s.StartTimeout, err = cliflag.Seconds("start-timeout", req.StartTimeout); err != nil {
		return err
	}
	if s.StartTimeout < time.Second {
		return usageError("{start-timeout} %s: want at least one second (3m, 180)", req.StartTimeout)
	}
	if s.ServerCPUs.Overlaps(s.ClientCPUs) {
		fmt.Fprintf(s.Log, "perfbisect: note: %s %s and %s %s share CPUs: the client takes CPU time from the server it measures\n", usage.Flag("server-cpus"), s.ServerCPUs, usage.Flag("client-cpus"), s.ClientCPUs)
	}
	return nil
}

// ParseBuildSettings checks the build settings (a bad one is a usage error
// naming it) and that the tools they need are installed.
func ParseBuildSettings(req BuildRequest) (BuildSettings, error) {
	var b BuildSettings
	if req.Jobs < 0 {
		return b, usageError("{build-jobs} %d: want a positive number of parallel build jobs (0 or none: one per CPU)", req.Jobs)
	}
	cmakeArgs, err := shellwords.Parse(req.CMakeArgs)
	if err != nil {
		return b, usageError("{cmake-args} %q: %v", req.CMakeArgs, err)
	}
	b.Recipe = build.Recipe{Preset: req.Preset, CMakeArgs: cmakeArgs, Jobs: req.Jobs,
		BuildCmd: strings.TrimSpace(req.BuildCmd), InstallCmd: strings.TrimSpace(req.InstallCmd),
		NoCcache: req.NoCcache, DistccHosts: strings.TrimSpace(req.DistccHosts), Icecc: req.Icecc}
	if _, err := build.PresetFor(b.Recipe.Preset, build.Tree{}); err != nil {
		return b, usageError("{preset}: %v", err)
	}
	if b.Recipe.BuildCmd != "" && (len(cmakeArgs) > 0 || req.PresetSet && b.Recipe.Preset != "none") {
		return b, usageError("{build-cmd} replaces CMake: leave out {cmake-args} and {preset} (the command has JOBS, SRC, BUILD_DIR, PREFIX and DESTDIR in its environment)")
	}
	if b.Recipe.BuildCmd == "" {
		if _, err := exec.LookPath("cmake"); err != nil {
			return b, With(Usage, build.ErrNoCMake)
		}
	}
	if b.Recipe.DistccHosts != "" {
		if _, err := exec.LookPath("distcc"); err != nil {
			return b, usageError("{distcc-hosts}: distcc is not installed (apt-get install distcc)")
		}
		if _, err := build.ParseDistccHosts(b.Recipe.DistccHosts); err != nil {
			return b, usageError("{distcc-hosts}: %v", err)
		}
		if b.Recipe.Icecc {
			return b, usageError("{distcc-hosts} and {icecc} are two compile farms: choose one")
		}
	}
	if d := strings.TrimSpace(req.SharedCache); d != "" {
		c, err := build.ParseSharedCache(d)
		if err != nil {
			return b, usageError("{shared-cache} %v", err)
		}
		if dir, ok := c.(build.SharedDir); ok {
			if err := unix.Access(string(dir), unix.R_OK|unix.X_OK); err != nil {
				return b, usageError("{shared-cache} %s: not readable (%v)", dir, err)
			}
			// A team's cache that CI fills and developers mount read-only.
			b.SharedReadOnly = unix.Access(string(dir), unix.W_OK) != nil
		}
		b.Shared = c
	}
	if d := strings.TrimSpace(req.Binaries); d != "" {
		if b.Binaries, err = build.OpenBinaries(d); err != nil {
			return b, usageError("{binaries}: %v", err)
		}
	}
	if b.Recipe.Icecc {
		if _, err := exec.LookPath("icecc"); err != nil {
			return b, usageError("{icecc}: icecream is not installed (apt-get install icecc; its iceccd must join your farm's scheduler)")
		}
	}
	if t := req.Timeout; t != "" {
		if b.Timeout, err = cliflag.Seconds("build-timeout", t); err != nil {
			return b, err
		}
		if b.Timeout < time.Second {
			return b, usageError("{build-timeout} %s: want at least one second (90m, 3600)", t)
		}
	}
	size, err := humanize.ParseBytes(req.CacheSize)
	if err != nil || size < 1<<20 || size > 1<<62 {
		return b, usageError("{build-cache-size} %q: want a size of at least 1MiB, such as 20GiB or 500MB", req.CacheSize)
	}
	b.Budget = int64(size)
	b.Verbose = req.Verbose
	b.RetryFailed = req.Retry
	switch l := strings.TrimSpace(req.Layouts); l {
	case "": // not given: ResolveLayouts decides once the tree is known
		b.LayoutsAuto = true
		return b, nil
	case "run":
		b.Layouts = build.LayoutPerRun
	default:
		if b.Layouts, err = strconv.Atoi(l); err != nil || b.Layouts < 1 || b.Layouts > 64 {
			return b, usageError("{layouts} %q: want run (a code layout of its own for every run), or 1 (the build's own) to 64 layouts kept per build", req.Layouts)
		}
	}
	if b.Layouts != 1 {
		if b.Recipe.BuildCmd != "" {
			return b, usageError("{layouts} %s links the server again with CMake's own link command: leave out {build-cmd}, or give {layouts} 1", req.Layouts)
		}
		if g := generator(b.Recipe); g != "" {
			return b, usageError("{layouts} %s reads the link command CMake's Makefile generator writes; the build uses %s: leave out -G, or give {layouts} 1", req.Layouts, g)
		}
		if _, err := exec.LookPath("ld.lld"); err != nil {
			// A missing package is the machine's.
			return b, With(Failure, usage.Errorf("{layouts} %s: %v; or give {layouts} 1", req.Layouts, build.ErrNoLLD))
		}
	}
	return b, nil
}

// newCustom returns the workload word names when it is not an OLTP one
// (bench.WorkloadKind): a *sysbench.Script run by sb with its own options args, a
// *SQLWorkload whose args are its variables and engine options, or *TPCC
// (its args: --warehouses=N and engine options). o gives the settings all
// take (threads, time, warm-up, seed, percentile); a SQL workload file
// takes o's table-size, tables, range-size and distribution too. Errors as
// NewScript's, NewSQLWorkload's and NewTPCC's.
func newCustom(ctx context.Context, word string, args []string, o bench.Options, sb sysbench.Binary) (bench.Workload, error) {
	switch bench.WorkloadKind(word) {
	case bench.KindSQL:
		return bench.NewSQLWorkload(word, o, args)
	case bench.KindTPCC:
		return bench.NewTPCC(o, args)
	}
	return sysbench.NewScript(ctx, word, args, o, sb)
}

// BayesConfidence is start's default confidence with the probabilistic
// search: the simulation grid (docs/statistics.md) names a wrong culprit in
// at most 1% of sessions in every row at it.
const BayesConfidence = 0.99

// searchDefaults gives a probabilistic search (cfg.Search bayes) its own
// confidence (BayesConfidence) and endpoints' repeat limit
// (session.BayesEndpointRuns) where the user set none; the classic search
// keeps the command's defaults.
func searchDefaults(cfg *session.Config, confidenceSet, maxRepeatsSet bool) {
	if cfg.Search != session.SearchBayes {
		return
	}
	if !confidenceSet {
		cfg.Confidence = BayesConfidence
	}
	if !maxRepeatsSet {
		cfg.MaxRepeats = session.BayesEndpointRuns
	}
}

// decideSearch decides start's search settings, once: Setup.SearchPolicy
// is Policy with the search, its commits per round and run budget, and the
// search's own confidence and repeat limit where the user set none. It
// checks SearchPolicy, or Policy for a command that does not search (req
// nil). Errors: usage, naming the setting.
func (s *Setup) decideSearch(req *SearchRequest) error {
	if req == nil {
		if err := s.Policy.Validate(); err != nil {
			return With(Usage, err)
		}
		return nil
	}
	if req.Jobs < 1 {
		return usageError("{jobs} %d: want 1 to 16 commits per round (1 is exact bisection)", req.Jobs)
	}
	s.SearchChosen = *req
	s.SearchPolicy = s.Policy
	s.SearchPolicy.Search, s.SearchPolicy.Jobs, s.SearchPolicy.MaxRuns = req.Search, req.Jobs, req.MaxRuns
	searchDefaults(&s.SearchPolicy, req.ConfidenceSet, req.MaxRepeatsSet)
	if err := s.SearchPolicy.Validate(); err != nil {
		return With(Usage, err)
	}
	if req.Search == session.SearchClassic && req.MaxRuns > 0 {
		// A note, not a refusal: stored classic sessions with --max-runs resume.
		fmt.Fprintf(s.Log, "perfbisect: note: %s %d is the probabilistic search's run budget: %s %s stops each commit at %s instead\n",
			usage.Flag("max-runs"), req.MaxRuns, usage.Flag("search"), session.SearchClassic, usage.Flag("max-repeats"))
	}
	return nil
}

// WorkloadDefaults are the workload settings' defaults: sysbench 1.0's
// (bench.DefaultOptions).
func WorkloadDefaults() bench.Options { return bench.DefaultOptions() }

// PresetNames are the built-in CMake recipes (build.PresetNames).
func PresetNames() []string { return build.PresetNames() }
