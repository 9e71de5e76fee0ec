package app

import (
	"context"
	"errors"
	"fmt"
	"github.com/perfbisect/perfbisect/bisect/runner"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bench/sysbench"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/diskfault"
	"github.com/perfbisect/perfbisect/internal/usage"
	"github.com/perfbisect/perfbisect/serverctl"
)

// Live receives a session's progress as it happens (a terminal's progress
// bar): each stored run, the pre-flight's estimate of the runs, each build's
// progress.
type Live interface {
	Run(commit string)
	Estimate(runs int)
	Build(build.Progress)
	Close() // the progress is over (before a final answer)
}

// Setup is what every measuring command (start, compare, scan, run) has
// checked and opened before it builds anything: the repository, the
// measurement and decision settings, and, once Lock has run, the state
// directory (locked, leftovers reaped) and its store.
type Setup struct {
	Repo     *git.Repository
	RepoRoot string // the work tree's root (or the path of a bare repository)
	// OptionFile is the user's option file, read once (zero: none).
	OptionFile serverctl.OptionFile
	// SideOptionFiles are compare's option files given one per side, in
	// order (OptionFile is then zero).
	SideOptionFiles []serverctl.OptionFile
	// Sides says what compare's subjects stand for (useSides), for the
	// measurer; nil in a bisection.
	Sides map[string]measure.Side
	// Workload is what every run measures (an OLTP workload, TPC-C, a SQL
	// workload file or a sysbench script), built once from the settings.
	Workload               bench.Workload
	ServerCPUs, ClientCPUs serverctl.CPUList
	SnapshotBudget         int64 // datadir snapshots, bytes
	FreshDatadir           bool
	StartTimeout           time.Duration // a server's start (0: serverctl's default)
	// Probe watches every run's window (explain's profiler); nil: none.
	Probe func(ctx context.Context, key string, srv *serverctl.Server) (func() (string, error), error)
	// Statements, with Probe, times the workload's statements and their
	// plans into the probe's directories (measure.Config.Statements).
	Statements bool
	// ProbeSettings, with Probe, are the probed servers' own option lines
	// (measure.Config.ProbeSettings); ProbeLabel begins their log lines
	// (measure.Config.ProbeLabel).
	ProbeSettings []string
	ProbeLabel    string
	Build         BuildSettings
	// Policy is the decision settings, without endpoints and commits.
	Policy session.Config
	// SearchPolicy is start's: Policy with the search's settings, decided
	// once (decideSearch); SearchChosen is the search as typed. Both zero
	// for the commands that do not search.
	SearchPolicy session.Config
	SearchChosen SearchRequest
	// Log receives progress lines (io.Discard for none); Live, when set,
	// the live progress.
	Log  io.Writer
	Live Live
	// Stdout receives the answers written without --output, Stderr what goes
	// wrong beside them (nil: the process's).
	Stdout, Stderr io.Writer

	// Runners are the runner hosts start takes its runs on (none: this
	// machine).
	Runners []runner.Host
	// Version is this perfbisect's, as --version prints it (a runner
	// host's is compared with it).
	Version string
	req     SetupRequest // as Configure was given it (the runner hosts' tasks)

	StateDir string       // set by Lock
	Store    *store.Store // set by Lock
	unlock   func()
	repoErr  error // why Repo is nil (compare of installed servers only)
}

// BuildSettings are how revisions are built: the recipe, a time limit for
// one revision's build (0: none), the build cache's size (bytes), raw build
// output on the log (Verbose), and whether remembered build failures are
// built again (RetryFailed).
type BuildSettings struct {
	Recipe      build.Recipe
	Timeout     time.Duration
	Budget      int64
	Verbose     bool
	RetryFailed bool
	Layouts     int               // code layouts per build (build.Builder.Layouts: K, or build.LayoutPerRun); 0 until ResolveLayouts
	LayoutsAuto bool              // --layouts not given: ResolveLayouts chose Layouts
	Shared      build.SharedCache // the shared build cache (--shared-cache; nil: none)
	// Binaries are the vendors' binary tarballs a bisection measures its
	// releases from first (--binaries; nil: none).
	Binaries *build.Binaries
	// SharedReadOnly: the shared cache's directory is not writable here
	// (revisions are fetched from it, builds are not stored).
	SharedReadOnly bool
}

// Lock takes the state directory (stateDir, or the repository's default;
// MakeStateDir), its lock and its store, ending processes an earlier,
// killed perfbisect left working for it. Errors: usage for a state
// directory that overlaps the work tree or is in use; failure for a store
// that cannot be opened.
func (s *Setup) Lock(stateDir string) error {
	dir, err := MakeStateDir(stateDir, s.RepoRoot)
	if err != nil {
		return err
	}
	s.StateDir = dir
	unlock, err := LockAndReap(dir, os.Stderr)
	if err != nil {
		return err
	}
	s.unlock = unlock
	if s.Store, err = store.Open(dir); err != nil {
		return With(Failure, err)
	}
	return nil
}

// Close releases the store and the state directory's lock.
func (s *Setup) Close() {
	if s.Store != nil {
		s.Store.Close()
	}
	if s.unlock != nil {
		s.unlock()
	}
}

// Measurer returns the real Measurer for this setup (after Lock), its
// leftovers of an earlier session tidied; its builds are recorded in the
// store under the session id() returns (called at each build).
func (s *Setup) Measurer(id func() int64) *measure.Measurer {
	builder := s.Build.Builder(s.Repo, s.StateDir, s.Log, s.Live)
	onBuild := func(b measure.BuildRecord) {
		if id() == 0 {
			return // no session (explain)
		}
		err := s.Store.AddBuild(id(), store.Build{Commit: b.Commit, Recipe: b.Recipe, Prefix: b.Prefix, Seconds: b.Duration.Seconds(),
			Flavor: b.Flavor, Version: b.Version, Error: b.Error, Cached: b.Cached})
		if err != nil {
			fmt.Fprintf(os.Stderr, "perfbisect: %v\n", err)
		}
	}
	m := measure.New(measure.Config{Builder: builder, StateDir: s.StateDir, OptionFile: s.OptionFile, Sides: s.Sides, Workload: s.Workload, Log: s.Log, OnBuild: onBuild,
		ServerCPUs: s.ServerCPUs, ClientCPUs: s.ClientCPUs,
		SnapshotBudget: s.SnapshotBudget, FreshDatadir: s.FreshDatadir, StartTimeout: s.StartTimeout, Setting: usage.Flag,
		Probe: s.Probe, Statements: s.Statements, ProbeSettings: s.ProbeSettings, ProbeLabel: s.ProbeLabel})
	m.Tidy()
	return m
}

// StoreSession wires cfg to the store's session id() (called at each write:
// start stores its session only once the session is valid): live events are
// appended from sequence number firstEvent on, steps from firstStep on (and
// passed to also when set), progress lines go to the log. It returns the
// number of steps stored so far (for a Diverged that truncates).
func (s *Setup) StoreSession(cfg *session.Config, id func() int64, firstEvent, firstStep int, also func(session.Step)) (steps func() int) {
	n := firstStep
	cfg.Hooks.Record = func(seq int, e session.Event) error {
		err := s.Store.Append(id(), firstEvent+seq, e)
		if err == nil && s.Live != nil && e.Kind == session.EventRun {
			s.Live.Run(e.Commit)
		}
		return err
	}
	if s.Live != nil {
		cfg.Hooks.OnEstimate = s.Live.Estimate
	}
	cfg.Hooks.OnStep = func(st session.Step) {
		if err := s.Store.AddStep(id(), n, st); err != nil {
			fmt.Fprintf(os.Stderr, "perfbisect: %v\n", err)
		}
		n++
		if also != nil {
			also(st)
		}
	}
	cfg.Hooks.Logf = func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		for k, sd := range s.Sides { // compare's sides by name, not by key
			if sd.Name != "" {
				msg = strings.ReplaceAll(msg, k[:min(10, len(k))], sd.Name)
			}
		}
		fmt.Fprintln(s.Log, msg)
	}
	cfg.Hooks.Setting = usage.Flag
	return func() int { return n }
}

// Begin records a new running session of kind in the store (store.Begin)
// and what its runs measure, the workload's Summary (store.Describe), for
// documents made later from the store alone.
func (s *Setup) Begin(kind store.Kind, args []string, dir, good, bad string, id store.Identity) (*store.Session, error) {
	sess, err := s.Store.Begin(kind, args, dir, good, bad, id)
	if err != nil {
		return nil, err
	}
	if err := s.Store.Describe(sess.ID, s.Workload.Summary()); err != nil {
		return nil, err
	}
	sess.Workload = s.Workload.Summary()
	return sess, nil
}

// SessionError is the error a bisection's failure ends start with: an
// interruption (with how to go on), a usage error for what the user must fix
// (an endpoint that cannot be measured, no CMake, a wrong option file), else
// a failure, said as a full or read-only disk when it is one, with how to
// resume.
func SessionError(err error, interrupted bool, stateDir, repoRoot string) error {
	var ee *session.EndpointError
	where := Where(stateDir, repoRoot)
	switch {
	case interrupted:
		return With(Interrupted, fmt.Errorf("interrupted; no server left running. Continue with: perfbisect resume %s (or the same start command); perfbisect status %s shows where it stands", where, where))
	case errors.As(err, &ee), errors.Is(err, build.ErrNoCMake), errors.Is(err, serverctl.ErrOptionFile):
		return With(Usage, err)
	case errors.Is(err, usage.Err):
		// The user's input found wanting during the session (a tarball of
		// --binaries): fixed, the same command goes on.
		return With(Usage, fmt.Errorf("%w (the session is kept: once that is fixed, perfbisect resume %s continues it)", err, where))
	case errors.Is(err, sysbench.ErrScriptFailed):
		return With(Usage, fmt.Errorf("%w: fix the script, then perfbisect resume %s: %v", sysbench.ErrScriptFailed, where, err))
	default:
		if stateDir != "" {
			if de := diskfault.Check(stateDir, err); de != nil {
				err = de // a store write on a full disk, say
			}
		}
		return With(Failure, fmt.Errorf("%w (the session is kept: perfbisect resume %s continues it)", err, where))
	}
}

// CheckSettings reads the user's option file as the servers of commits (the
// endpoints first, then every revision that may be measured) will read it,
// before anything is built: with the option groups of each tree's flavor and
// version (read from the tree; a tree that states neither is read as a
// MariaDB one's), and refuses with the file and line what no server option
// can fix (serverctl.CheckSettings): a usage error. Of a long range, 300
// trees spread over it are read (a series changes its version file rarely).
// Nothing without an option file.
func (s *Setup) CheckSettings(commits ...string) error {
	if s.OptionFile.IsZero() {
		return nil
	}
	if maxTrees := 300; len(commits) > maxTrees {
		sampled := commits[:2:2] // the endpoints
		for i := 0; i < maxTrees; i++ {
			sampled = append(sampled, commits[2+i*(len(commits)-2)/maxTrees])
		}
		commits = sampled
	}
	groups, err := treeGroups(s.Repo, commits...)
	if err != nil {
		return err
	}
	if err := checkOptionGroups(s.OptionFile, groups); err != nil {
		return usageError("{my-cnf}: %w", err)
	}
	return nil
}

// treeGroups are the option groups the servers of commits read, from each
// tree's flavor and version (a tree that states neither is read as a
// MariaDB one's), each once.
func treeGroups(repo *git.Repository, commits ...string) ([]string, error) {
	seen := map[string]bool{}
	var groups []string
	for _, c := range commits {
		t, err := build.InspectTree(repo, c)
		if err != nil {
			return nil, err
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
	return groups, nil
}

// checkOptionGroups reads of as a server reading groups does and refuses,
// with the file and line, what no server option can fix
// (serverctl.CheckSettings). Nothing without an option file.
func checkOptionGroups(of serverctl.OptionFile, groups []string) error {
	if of.IsZero() {
		return nil
	}
	set, err := of.Groups(groups)
	if err == nil {
		err = serverctl.CheckSettings(set)
	}
	return err
}

// Builder returns the Builder for these settings: progress lines to log, the
// build's progress on live when set (else a line per quarter on log), raw
// output on log with Verbose (on stderr when log is discarded: -v wins over
// --quiet).
func (b BuildSettings) Builder(repo *git.Repository, stateDir string, log io.Writer, live Live) *build.Builder {
	bl := &build.Builder{Repo: repo, StateDir: stateDir, Recipe: b.Recipe, Log: log, Timeout: b.Timeout, CacheBudget: b.Budget, RetryFailed: b.RetryFailed, Layouts: b.Layouts,
		Shared: b.Shared, SharedReadOnly: b.SharedReadOnly,
		Lock: func(ctx context.Context, what string) (func(), error) {
			return measure.MachineLock(ctx, what, stateDir, log)
		}}
	switch {
	case b.Verbose:
		bl.Raw = log // through the bar's writer when there is one
		if log == nil || log == io.Discard {
			bl.Raw = os.Stderr
		}
	case live != nil:
		bl.Progress = live.Build
	case log != nil && log != io.Discard:
		bl.Progress = BuildProgressLines(log)
	}
	return bl
}

// MemoryLimit is perfbisect's soft limit of the Go heap (bytes) unless
// GOMEMLIMIT sets one: it keeps a real tree's checkout small
// (scripts/checkout-memory; docs/measurements.md), the garbage collector
// working harder only near the limit.
const MemoryLimit = 64 << 20

// LimitMemory sets MemoryLimit as the process's soft memory limit, unless
// the GOMEMLIMIT environment variable says otherwise.
func LimitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(MemoryLimit)
	}
}

// BuildProgressLines returns a Builder.Progress that writes a progress line
// to w each time the build step crosses a quarter (for logs, where a bar
// cannot redraw).
func BuildProgressLines(w io.Writer) func(build.Progress) {
	last := map[string]int{}
	return func(bp build.Progress) {
		if bp.Percent < 0 {
			return
		}
		key := bp.Commit + " " + bp.Step
		if q := bp.Percent / 25; q > last[key] {
			last[key] = q
			fmt.Fprintln(w, bp)
		}
	}
}
