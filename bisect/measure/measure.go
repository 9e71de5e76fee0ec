// Package measure is the bisect.Measurer that does the real thing: it builds a
// revision (package build), initialises and prepares a datadir once per revision
// and keeps it as a snapshot, then for every run restores the snapshot, starts
// the server (package serverctl), runs the workload (package bench) and stops
// the server. It classifies failures: the revision's (build failure, server that
// does not start or dies: *bisect.UntestableError) versus the tool's or the
// machine's (returned as is, after bounded retries for transient ones). It never
// decides good or bad.
package measure

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	humanize "github.com/dustin/go-humanize"
	"github.com/google/renameio/v2"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/diskfault"
	"github.com/perfbisect/perfbisect/internal/faultpoint"
	"github.com/perfbisect/perfbisect/internal/lru"
	"github.com/perfbisect/perfbisect/internal/syncfs"
	"github.com/perfbisect/perfbisect/serverctl"
)

// Config is what the measurer needs besides the revisions.
type Config struct {
	Builder    *build.Builder
	StateDir   string               // datadir snapshots and run directories go here
	OptionFile serverctl.OptionFile // the user's my.cnf (zero: none)
	// Sides says what a subject stands for when it is more than a revision
	// of Builder's tree under OptionFile (perfbisect compare's sides), by
	// the subject's key; a key not in it is such a revision.
	Sides map[string]Side
	// Workload is what every run measures: it prepares the datadir
	// snapshot (its tables in database sbtest) and runs each window.
	Workload bench.Workload
	// ServerCPUs and ClientCPUs place the measured server and the workload's
	// client (this process's threads, or sysbench) on CPUs, as taskset would
	// (zero: no placement). Each run records where they actually ran.
	ServerCPUs, ClientCPUs serverctl.CPUList
	// FreshDatadir initialises a new datadir and loads the tables for every run
	// instead of restoring the prepared snapshot (--fresh-datadir): slower, for
	// regressions in what a long-lived snapshot hides (file layout after the
	// load, a cold start of a just-initialised server).
	FreshDatadir bool
	// SnapshotBudget bounds the disk space (bytes) of the prepared datadirs kept
	// in StateDir across sessions; least recently used ones beyond it are
	// deleted. 0: DefaultSnapshotBudget.
	SnapshotBudget int64
	// StartTimeout bounds the wait for a started server to accept
	// connections (serverctl.Options.StartTimeout; 0: its default, 3
	// minutes). Past it the start fails with the server's error log, and the
	// run is tried again as any failed run is.
	StartTimeout time.Duration
	Log          io.Writer // progress lines; may be nil
	// OnBuild, when set, is called after every build attempt of a revision
	// (cache hits included): for the store.
	OnBuild func(BuildRecord)
	// Retries is how many times a run is retried after a failure that is not the
	// revision's (a lost connection while mysqld is alive, a port race); default 2.
	Retries int
	// DisturbedRetries is how many times a run whose window was disturbed
	// (DisturbedShare) is measured again; 0: 3; negative: never.
	DisturbedRetries int
	// QuietPatience is how long a run waits for other processes to leave
	// the machine when they took more than BusyShare of its CPU during the
	// window (such a run never counts); past it the session stops, the
	// machine's fault. 0: 10 minutes.
	QuietPatience time.Duration
	// ThrottledPause is how long a run that a passing CPU quota throttled
	// waits, once its re-measurements are spent, before it is measured
	// again. 0: 5 seconds.
	ThrottledPause time.Duration
	// Setting, when set, spells a setting's name (start-timeout,
	// snapshot-cache-size) as the caller's user knows it in reasons and
	// notes: the command line gives usage.Flag. Nil: the name as it is.
	Setting func(name string) string
	// Probe, when set, watches the server through every run's window (a
	// profiler): it is called as the window opens and returns the function
	// that ends it as the window closes, while the workload's threads are
	// still connected; what that returns is kept in the run's Facts under
	// ProbeFact. An error of either fails the run as the machine's (never
	// the revision's). Runs that are probed are never a verdict's, and keep
	// no Status: the probe reads the counters itself.
	Probe func(ctx context.Context, key string, srv *serverctl.Server) (end func() (string, error), err error)
	// Statements, with Probe, has the workload time its statements and
	// EXPLAIN them (bench.Hooks.Statements); they are written as JSON
	// (a []bench.StatementTime) into StatementsFile of the directory the
	// probe's end returned. A workload that cannot time them (sysbench)
	// writes no file.
	Statements bool
	// ProbeSettings, with Probe, are option lines the servers of probed
	// runs start with, after the user's (serverctl.Options.Settings): the
	// probe's instruments (serverctl.WaitSettings).
	ProbeSettings []string
	// ProbeLabel begins the log line of a probed run ("" is "profiled
	// run"; explain's pinned-settings runs read counters, no profile).
	ProbeLabel string
	// HistoryFile, when set, keeps what the runs said of the machine
	// (the neighbour signs' histories) across processes: a runner host's
	// tasks are a process each, and a CPU quota that stays is its level
	// only once its runs are remembered. Read by New, written after
	// every run; unreadable is empty.
	HistoryFile string
	// Unsettled makes snapshots as they were made before settle: the
	// load's server stops at once, with the optimizer statistics and the
	// undo history the load left. Only for measuring what that costs
	// (scripts/variance -unsettled); a session never sets it.
	Unsettled bool
}

// FactTarball is the key in a run's Facts of the binary tarball it
// measured (build.Tarball.Key: its name, size and time), for a release
// measured from one (Side.Tarball).
const FactTarball = "binary tarball"

// ProbeFact is the key in a run's Facts of what Config.Probe returned.
const ProbeFact = "probe"

// StatementsFile is the file of a probed run's directory that holds the
// workload's statement times (Config.Statements).
const StatementsFile = "statements.json"

// A Side is what one subject of a session stands for: a revision of a tree
// (Commit, built by Builder), a server installed outside the state
// directory (Basedir: nothing is built) or a vendor's binary tarball of a
// release (Tarball: unpacked, nothing is built), with its option file.
type Side struct {
	Name       string               // how progress lines name it ("" for the commit's short hash)
	Commit     string               // the revision; "" for an installed server
	Builder    *build.Builder       // its tree's (nil: Config.Builder)
	Basedir    string               // an installed server's base directory (/usr)
	OptionFile serverctl.OptionFile // the side's (zero: none)
	// Tarball is the release's binary tarball (--binaries), unpacked once
	// under the state directory; its server must report the tarball's
	// flavor and version.
	Tarball *build.Tarball
}

// installed reports whether the side is a server nobody builds here.
func (s Side) installed() bool { return s.Basedir != "" || s.Tarball != nil }

// side is what the subject key stands for (Config.Sides).
func (m *Measurer) side(key string) Side {
	s, ok := m.cfg.Sides[key]
	if !ok {
		return Side{Commit: key, Builder: m.cfg.Builder, OptionFile: m.cfg.OptionFile}
	}
	if s.Builder == nil && !s.installed() {
		s.Builder = m.cfg.Builder
	}
	return s
}

// label is how progress lines name the subject key: its side's Name, or
// its short hash.
func (m *Measurer) label(key string) string {
	if s, ok := m.cfg.Sides[key]; ok && s.Name != "" {
		return s.Name
	}
	return fmt.Sprintf("%.10s", key)
}

// setting is name as the caller spells it (Config.Setting).
func (m *Measurer) setting(name string) string {
	if m.cfg.Setting != nil {
		return m.cfg.Setting(name)
	}
	return name
}

// BuildRecord is one build attempt of a revision as the store keeps it.
type BuildRecord struct {
	Commit   string
	Recipe   string        // build.Recipe.Hash
	Prefix   string        // the installed tree ("" when the build failed)
	Duration time.Duration // wall time of the attempt (a cache hit takes milliseconds)
	Flavor   string        // of the server found in the tree, e.g. MariaDB
	Version  string        // e.g. 10.11.6
	Error    string        // why it failed, "" when it did not
	Cached   bool          // found in the build cache: nothing was built
}

// Measurer implements bisect.Measurer.
type Measurer struct {
	cfg  Config
	revs map[string]*revision
	// built are the install trees of the revisions Build built, for runs
	// taken elsewhere.
	built map[string]string
	runN  int
	host  map[string]string // HostFacts, read at the first run
	// overrideNoted: the user's overridden settings have been shown once.
	overrideNoted bool
	// emulatedNoted: statements the server would not prepare have been named once.
	emulatedNoted bool
	// stealNoted: the hypervisor's steal has been said once.
	stealNoted bool
	// mostlyDisturbedNoted: that disturbed runs count has been said once.
	mostlyDisturbedNoted bool
	// quotaNoted: a CPU quota that throttles every run has been said once.
	quotaNoted bool
	// counted and remeasured count, per revision, the runs returned and the
	// disturbed runs measured again (at most 3 + a quarter of the counted):
	// every revision gets the same allowance, wherever it is in the session.
	counted, remeasured map[string]int
	// signs are, per revision, what its runs' first attempts said of the
	// machine, allSigns the same for every revision (neighbourSign's
	// histories).
	signs    map[string][]signs
	allSigns []signs
}

type revision struct {
	side     Side
	install  *serverctl.Install
	snapshot string // prepared datadir, never started again
	// layouts are the build's server linked in other code layouts
	// (build.Builder.Layouts); its runs rotate over them (runInstall) from
	// a layout drawn at random, so that the runs of a resumed session do
	// not begin again on the first.
	layouts     []*serverctl.Install
	firstLayout int
	// kit is the install entry whose link inputs give every run a code
	// layout of its own (build.LayoutPerRun: runLayout); "" without.
	kit string
}

// codeLayouts are a build's servers in other code layouts
// (build.Builder.Layouts): K kept ones, or the entry whose link inputs link
// one for every run.
type codeLayouts struct {
	layouts []*serverctl.Install
	kit     string
}

// runInstall is the server of the revision's run n (0-based, counted runs in
// this process): its layout firstLayout+n mod K when it has K, else its
// build's.
func (r *revision) runInstall(n int) (in *serverctl.Install, layout string) {
	if len(r.layouts) == 0 {
		return r.install, ""
	}
	i := (r.firstLayout + n) % len(r.layouts)
	return r.layouts[i], bisect.LayoutKept(i+1, len(r.layouts))
}

// runLayout links the server of the install entry prefix in a code layout
// of its own for one run (build.LinkLayout, a seed drawn at random) under
// the state directory's layouts/ (the temporary directory without one),
// and returns the binary (its directory removed by the caller) and the
// seed. Layouts a killed process left there go first: every run holds the
// machine lock. A link that fails is the machine's: the entry's kit linked
// when it was built.
func (m *Measurer) runLayout(ctx context.Context, prefix string) (string, int, error) {
	dir := os.TempDir()
	if m.cfg.StateDir != "" {
		dir = filepath.Join(m.cfg.StateDir, "layouts")
		_ = os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", 0, err
		}
	}
	seed := 1 + rand.IntN(1<<31-2) // lld's seed: 0 and -1 mean other orders
	bin, err := build.LinkLayout(ctx, prefix, uint64(seed), dir, io.Discard)
	if err != nil {
		return "", 0, fmt.Errorf("code layouts (--layouts run): %w", err)
	}
	return bin, seed, nil
}

// New returns a Measurer for cfg.
func New(cfg Config) *Measurer {
	if cfg.Retries == 0 {
		cfg.Retries = 2
	}
	if b := cfg.Builder; b != nil && b.Lock == nil {
		// Build steps wait for other perfbisects' measured windows, and
		// theirs for ours.
		b.Lock = func(ctx context.Context, what string) (func(), error) {
			return MachineLock(ctx, what, cfg.StateDir, cfg.Log)
		}
	}
	m := &Measurer{cfg: cfg, revs: map[string]*revision{}, counted: map[string]int{}, remeasured: map[string]int{}, signs: map[string][]signs{}}
	m.loadHistory()
	return m
}

// Server returns the server the subject key was prepared with (its build,
// or the installed server of its side), or nil when it has not been.
func (m *Measurer) Server(key string) *serverctl.Install {
	if r := m.revs[key]; r != nil {
		return r.install
	}
	return nil
}

// Tidy frees the disk space of earlier sessions' interrupted or failed runs: it
// removes the datadir copies under StateDir/runs (keeping their logs as
// evidence) and the socket directories of runs whose process was killed. Call it while holding the state directory's lock.
func (m *Measurer) Tidy() {
	dirs, _ := filepath.Glob(filepath.Join(m.cfg.StateDir, "runs", "*"))
	prep, _ := filepath.Glob(filepath.Join(m.cfg.StateDir, "datadirs", "*", "prepare"))
	for _, d := range append(dirs, prep...) {
		serverctl.RemoveSocketDir(d)
	}
	for _, d := range dirs {
		if err := serverctl.RemoveDatadir(filepath.Join(d, "data")); err != nil {
			m.logf("note: %v", err)
		}
	}
}

// Measure builds and prepares commit (once) and measures runs runs. Errors: an
// *bisect.UntestableError for the revision's faults; a *diskfault.Error when
// the state directory's disk is full or read-only (whatever failed);
// build.ErrNoCMake and other machine or tool failures as they are.
func (m *Measurer) Measure(ctx context.Context, commit string, runs int) ([]bisect.Run, error) {
	rev, err := m.prepare(ctx, commit)
	if err != nil {
		return nil, m.diskFault(ctx, err)
	}
	out := make([]bisect.Run, 0, runs)
	for i := 0; i < runs; i++ {
		r, err := m.undisturbedRun(ctx, commit, rev)
		if err != nil {
			return out, m.diskFault(ctx, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// DisturbedShare is the share of the machine's CPU time over a run's measured
// window (window x CPUs) above which the run counts as disturbed: CPU time the
// hypervisor gave to other guests (steal) plus CPU time processes other than
// perfbisect and the measured server used in user and system mode (the
// client's too when it is another process, sysbench, so there only steal
// counts). The
// machine's CPUs are all its CPUs (/proc/stat), so on a machine of many CPUs
// a process that takes one whole CPU beside the server may stay under it. On
// a 2-CPU virtual machine a window with 7-35% steal measured a good revision
// at 123-300 tps against 310-500 in the undisturbed windows around it: at
// the bad revision's level.
const DisturbedShare = 0.05

// BusyShare is the share of the machine's CPU time over a run's window that
// other processes (not the hypervisor's steal) may take before the run is
// not counted at all, however many times it was measured again: a fault
// suite's bisection, measured while a test suite ran beside it (other
// processes 20-80% of the CPU in every window for two minutes), named a
// wrong first bad commit at posterior probability 1 from such runs, which
// counted (marked disturbed) once their re-measurements ran out. Such a run
// waits for the machine to be quiet (Config.QuietPatience) and is measured
// again. Steal is not a process that ends: it stays with DisturbedShare.
const BusyShare = 0.15

// disturbance is what the machine did besides the measurement during a
// run's window.
type disturbance struct {
	steal, other time.Duration // the hypervisor's; other processes'
	capacity     time.Duration // the machine's CPU time over the window
	// signs are what the run's own processes said of the machine; why and
	// kind are neighbourSign's reading of them ("" when nothing).
	signs     signs
	why, kind string
}

// tickSlack is what the kernel's 10 ms accounting may add to a window's
// steal and other processes' time without anything having happened (five
// counters read at each end, each truncated to a tick).
const tickSlack = 50 * time.Millisecond

// disturbed reports whether the run's window lost more than DisturbedShare of
// the machine's CPU time (and tickSlack) to others.
func (d disturbance) disturbed() bool {
	return d.why != "" || d.lostCPU()
}

// lostCPU reports whether steal and other processes took more than
// DisturbedShare of the window's CPU time (and tickSlack).
func (d disturbance) lostCPU() bool {
	return d.capacity > 0 && float64(d.steal+d.other-tickSlack) > DisturbedShare*float64(d.capacity)
}

// kinds names the disturbance's kinds, as the report counts them: "steal",
// "other processes", and neighbourSign's.
func (d disturbance) kinds() []string {
	var k []string
	if d.lostCPU() {
		if d.steal >= d.other {
			k = append(k, "steal")
		} else {
			k = append(k, "other processes")
		}
	}
	if d.kind != "" {
		k = append(k, d.kind)
	}
	return k
}

// severity orders disturbances: the CPU time the window lost to others
// (steal, other processes, a throttled cgroup), and a tenth of the window's
// capacity for a neighbour seen only in the run's own processes.
func (d disturbance) severity() time.Duration {
	s := d.steal + d.other
	if d.signs.throttled > 0 {
		s += d.signs.throttled
	}
	if d.why != "" && d.signs.throttled <= 0 {
		s += d.capacity / 10
	}
	return s
}

// busy reports whether other processes took more than BusyShare of the
// machine's CPU time over the window.
func (d disturbance) busy() bool {
	return d.capacity > 0 && float64(d.other-tickSlack) > BusyShare*float64(d.capacity)
}

func (d disturbance) String() string {
	s := fmt.Sprintf("steal %.2fs, other processes %.2fs of the window's %.1f CPU-seconds",
		d.steal.Seconds(), d.other.Seconds(), d.capacity.Seconds())
	if d.why != "" {
		s += "; " + d.why
	}
	return s
}

// maxThrottledPauses bounds the pauses one run waits for a passing CPU quota
// once its re-measurements are spent.
const maxThrottledPauses = 8

// undisturbedRun measures one run of commit. A run that fails for a reason not
// the revision's (see transient) is retried up to Config.Retries times; a run
// whose window was disturbed (DisturbedShare) is measured again up to
// Config.DisturbedRetries times and not counted, while such re-measurements
// cost at most 3 runs and a quarter of the revision's runs counted so far: the run
// returned names the discarded ones in its facts (discarded_runs), and when
// every attempt was disturbed it is the least disturbed one, with the fact
// "disturbed". A run whose window other processes took more than BusyShare
// of is never counted nor one of the retries: it waits for the machine to
// be quiet (waitQuiet), then is measured again; an error when they stay. A
// run the neighbour signs found disturbed (neighbourSign: a throttled
// cgroup, descheduled threads, a slower machine) takes the retries of
// steal: they can follow the revision's own behaviour, and the allowance
// bounds how many of its own runs are set aside. Each run's first attempt
// joins the histories, so a condition that stays (a container's CPU quota)
// becomes the level. A throttled run whose re-measurements are spent is
// not counted yet (a quota the session's runs do not share is the
// machine's): it waits Config.ThrottledPause and is measured again, up to
// maxThrottledPauses times, each such attempt joining the session's history
// too, so a quota that stays becomes the level; then the least throttled
// attempt counts, marked (a quota that only this revision's demand for CPU
// meets costs each of its runs that much, no more).
func (m *Measurer) undisturbedRun(ctx context.Context, commit string, rev *revision) (bisect.Run, error) {
	retries := m.cfg.DisturbedRetries
	if retries == 0 {
		retries = 3
	}
	var discarded, kinds []string
	var best bisect.Run
	var bestD disturbance
	haveBest := false
	discard := func(r bisect.Run, d disturbance) {
		discarded = append(discarded, fmt.Sprintf("%.1f tps (%s)", r.TPS, d))
		kinds = append(kinds, d.kinds()...)
	}
	// consider keeps the better of r and the run kept so far (an
	// undisturbed one, else the less disturbed) and discards the other.
	consider := func(r bisect.Run, d disturbance) {
		switch {
		case !haveBest:
			best, bestD, haveBest = r, d, true
		case !d.disturbed() || d.severity() < bestD.severity():
			discard(best, bestD)
			best, bestD = r, d
		default:
			discard(r, d)
		}
	}
	var busySince time.Time // the first run other processes kept busy
	sampled, paused, pauses := false, false, 0
	for attempt := 0; ; {
		r, d, err := m.retriedRun(ctx, commit, rev)
		if err == nil && m.cfg.Probe == nil && !sampled {
			// A run's first attempt is what the machine was like at an
			// arbitrary moment; the attempts after it cluster where a
			// neighbour is, and would make it look usual.
			sampled = true
			m.signs[commit] = append(m.signs[commit], d.signs)
			m.allSigns = append(m.allSigns, d.signs)
			m.saveHistory()
		} else if err == nil && paused {
			// An attempt after a pause is a later moment's sample.
			m.allSigns = append(m.allSigns, d.signs)
			m.saveHistory()
		}
		paused = false
		if err != nil {
			if !haveBest || bisect.IsUntestable(err) || ctx.Err() != nil {
				return bisect.Run{}, err
			}
			// A disturbed run is in hand: it counts, said so, rather than
			// the failure of its re-measurement stopping the session.
			m.logf("note: measuring run %s again failed (%v): the disturbed run counts", m.label(commit), err)
			best.Facts["disturbed"] = bestD.String()
			break
		}
		if !d.disturbed() {
			consider(r, d)
			break
		}
		if d.busy() {
			// Never counted, and not one of the retries: the run waits for
			// the other processes to leave, then is measured again.
			discard(r, d)
			m.logf("disturbed run of %s: %.1f tps (%s): measured again, not counted", m.label(commit), r.TPS, d)
			if busySince.IsZero() {
				busySince = time.Now()
			}
			if err := m.waitQuiet(ctx, commit, busySince); err != nil {
				return bisect.Run{}, err
			}
			continue
		}
		consider(r, d)
		spent := attempt >= retries || m.remeasured[commit] >= 3+m.counted[commit]/4
		if spent && retries >= 0 && d.kind == "throttled" && !d.lostCPU() && pauses < maxThrottledPauses {
			pauses++
			pause := m.cfg.ThrottledPause
			if pause == 0 {
				pause = 5 * time.Second
			}
			m.logf("throttled run of %s: %.1f tps (%s): its re-measurements are spent, and the session's other runs were not throttled so: measuring it again in %s (not counted; pause %d of %d)",
				m.label(commit), r.TPS, d, pause, pauses, maxThrottledPauses)
			select {
			case <-ctx.Done():
				return bisect.Run{}, ctx.Err()
			case <-time.After(pause):
			}
			paused = true
			continue
		}
		if retries < 0 || spent {
			best.Facts["disturbed"] = bestD.String()
			switch {
			case retries < 0:
			case attempt < retries:
				// Measuring again costs at most a quarter of the runs (and 3):
				// on a machine disturbed in most windows it would never end.
				if !m.mostlyDisturbedNoted {
					m.mostlyDisturbedNoted = true
					m.logf("note: run %s: the machine is disturbed in most windows: runs count as measured, marked disturbed (%s; said once)", m.label(commit), bestD)
				}
			default:
				m.logf("note: run %s: the machine stayed disturbed through %d attempts: the least disturbed run counts, marked disturbed (%s)", m.label(commit), attempt+1, bestD)
			}
			break
		}
		attempt++
		m.remeasured[commit]++
		m.logf("disturbed run of %s: %.1f tps (%s): measured again, not counted", m.label(commit), r.TPS, d)
	}
	m.counted[commit]++
	if len(discarded) > 0 {
		best.Facts["discarded_runs"] = strings.Join(discarded, "; ")
		best.Facts[bisect.FactDiscardedKinds] = strings.Join(kinds, ",")
	}
	if k := bestD.kinds(); best.Facts["disturbed"] != "" && len(k) > 0 {
		best.Facts[bisect.FactDisturbedKinds] = strings.Join(k, ",")
	}
	m.logRun(commit, best)
	return best, nil
}

// waitQuiet waits until other processes take at most BusyShare of the
// machine's CPU over a 2-second sample, saying so once; Config.QuietPatience
// after began (the run's first busy window: a machine busy in every run's
// window but quiet between them must end too) it returns an error that is
// the machine's (the session stops, resumable). Nothing is waited for when
// the machine's CPU time cannot be read.
func (m *Measurer) waitQuiet(ctx context.Context, commit string, began time.Time) error {
	patience := m.cfg.QuietPatience
	if patience == 0 {
		patience = 10 * time.Minute
	}
	const sample = 2 * time.Second
	for noted := false; ; noted = true {
		var p loadProbe
		p.begin()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(sample):
		}
		p.end()
		other, _, loadavg, ok := p.other(0)
		capacity := sample * time.Duration(serverctl.MachineCPUs())
		d := disturbance{other: other, capacity: capacity}
		switch {
		case time.Since(began) >= patience:
			return fmt.Errorf("other processes kept the machine busy for %s while %s was measured (%.0f%% of its CPU in the last %s, load average %.2f): a run now would measure them, not the revision; nothing was counted: resume when the machine is quiet",
				patience, m.label(commit), 100*float64(other)/float64(capacity), sample, loadavg)
		case !ok || !d.busy():
			if noted {
				m.logf("the machine is quiet again after %s: measuring %s", time.Since(began).Round(time.Second), m.label(commit))
			}
			return nil
		case !noted:
			m.logf("note: other processes take %.0f%% of the machine's CPU (load average %.2f): waiting up to %s for them to end before measuring %s again",
				100*float64(other)/float64(capacity), loadavg, patience, m.label(commit))
		}
	}
}

// retriedRun is run, retried up to Config.Retries times after a failure that
// is not the revision's.
func (m *Measurer) retriedRun(ctx context.Context, commit string, rev *revision) (bisect.Run, disturbance, error) {
	for attempt := 0; ; attempt++ {
		r, d, err := m.run(ctx, commit, rev)
		if err == nil || bisect.IsUntestable(err) || ctx.Err() != nil || !transient(err) {
			return r, d, err
		}
		// The failed attempt's logs stay as evidence; its datadir copy went
		// (run).
		if attempt >= m.cfg.Retries {
			if errors.Is(err, errKilled) {
				return r, d, &bisect.UntestableError{Commit: commit, Reason: fmt.Sprintf("server killed by SIGKILL in all %d attempts of a run (the OOM killer? see dmesg)", attempt+1), Err: err}
			}
			return r, d, err
		}
		m.logf("run of %s: %v; retrying (not the revision's fault)", m.label(commit), err)
	}
}

// runDir is the directory of commit's latest run of this Measurer.
func (m *Measurer) runDir(commit string) string {
	return filepath.Join(m.cfg.StateDir, "runs", fmt.Sprintf("%.12s-%d-%d", commit, os.Getpid(), m.runN))
}

// Prepare builds commit and prepares its datadir snapshot (bisect.Preparer).
// Errors as for Measure.
func (m *Measurer) Prepare(ctx context.Context, commit string) error {
	_, err := m.prepare(ctx, commit)
	return m.diskFault(ctx, err)
}

// diskFault returns err as a *diskfault.Error when the disk that holds the
// state directory is full or read-only: a server that cannot write its
// datadir fails as a broken revision does, and must not be blamed for it.
func (m *Measurer) diskFault(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	if de := diskfault.Check(m.cfg.StateDir, err); de != nil {
		// Not an *UntestableError in the chain: the session would skip
		// the revision.
		var u *bisect.UntestableError
		if errors.As(de.Err, &u) {
			de.Err = fmt.Errorf("%.10s: %s: %w", u.Commit, u.Reason, u.Err)
		}
		return de
	}
	return err
}

// transient reports whether a failure is worth retrying: a connection lost while
// the server stayed alive, a server start that lost a port race, a server
// killed by SIGKILL from outside.
func transient(err error) bool {
	return errors.Is(err, bench.ErrConnectionLost) || errors.Is(err, errTransient) || errors.Is(err, errKilled)
}

var errTransient = errors.New("transient")

// notReady reports whether err is a server start that timed out (a server
// that hangs at start, or a stalled machine): the preparation is tried
// again, as a run is.
func notReady(err error) bool {
	var se *serverctl.ServerError
	return errors.As(err, &se) && se.NotReady
}

// errKilled is a server's death by SIGKILL, which comes from outside it:
// retried as transient; when every attempt is killed, the revision is
// untestable (a memory regression the OOM killer stops every time).
var errKilled = errors.New("the server was killed by SIGKILL from outside it (the kernel's OOM killer, see dmesg, or another process): not the revision's crash")

// killedErr wraps a server's death by SIGKILL as errKilled.
func killedErr(died error) error { return fmt.Errorf("%w: %v", errKilled, died) }

// killedFromOutside reports whether err is a server's death by SIGKILL.
func killedFromOutside(err error) bool {
	var se *serverctl.ServerError
	return errors.As(err, &se) && se.KilledFromOutside()
}

// prepare builds commit and makes its datadir snapshot, once per revision (the
// snapshot is reused across sessions when the build, option file and workload
// are the same).
func (m *Measurer) prepare(ctx context.Context, commit string) (*revision, error) {
	if r := m.revs[commit]; r != nil {
		return r, nil
	}
	side := m.side(commit)
	in, lay, err := m.install(ctx, commit, side)
	if err != nil {
		return nil, err
	}
	layouts, kit := lay.layouts, lay.kit
	first := 0
	if len(layouts) > 0 {
		first = rand.IntN(len(layouts))
	}
	if m.cfg.FreshDatadir {
		rev := &revision{side: side, install: in, layouts: layouts, firstLayout: first, kit: kit}
		m.revs[commit] = rev
		return rev, nil
	}
	key, err := m.snapshotKey(ctx, commit, side, in)
	if err != nil {
		return nil, err
	}
	snap := filepath.Join(m.cfg.StateDir, "datadirs", key)
	rev := &revision{side: side, install: in, snapshot: filepath.Join(snap, "data"), layouts: layouts, firstLayout: first, kit: kit}
	if _, err := os.Stat(filepath.Join(snap, "complete")); err == nil {
		now := time.Now()
		_ = os.Chtimes(filepath.Join(snap, "complete"), now, now) // last used, for eviction
		m.revs[commit] = rev
		return rev, nil
	}
	for attempt := 0; ; attempt++ {
		err := m.makeSnapshot(ctx, commit, in, snap, rev)
		if err == nil {
			break
		}
		hung := notReady(err)
		if !errors.Is(err, errKilled) && !hung || ctx.Err() != nil {
			return nil, err
		}
		if attempt >= m.cfg.Retries {
			if hung {
				return nil, &bisect.UntestableError{Commit: commit, Reason: fmt.Sprintf("server never accepted connections in %d attempts to prepare its datadir (%s)", attempt+1, m.setting("start-timeout")), Err: err}
			}
			return nil, &bisect.UntestableError{Commit: commit, Reason: fmt.Sprintf("server killed by SIGKILL in all %d attempts to prepare its datadir (the OOM killer? see dmesg)", attempt+1), Err: err}
		}
		if hung {
			m.logf("prepare %s: %v; preparing again (a stalled machine, or a server that hangs at every start?)", m.label(commit), err)
			continue
		}
		m.logf("prepare %s: %v; preparing again (not the revision's fault)", m.label(commit), err)
	}
	m.revs[commit] = rev
	m.evictSnapshots()
	return rev, nil
}

// Build builds commit (once; the build cache keeps it) without preparing
// a datadir, for runs taken elsewhere (runner hosts), and returns its
// install tree and its key there (build.Builder.EntryKey). Errors as
// Measure's: an *bisect.UntestableError for a revision that does not
// build; a side that is not a revision of a tree is the caller's.
func (m *Measurer) Build(ctx context.Context, commit string) (prefix, key string, err error) {
	side := m.side(commit)
	if side.installed() {
		return "", "", fmt.Errorf("build %s: not a revision of a tree (an installed server or a tarball)", m.label(commit))
	}
	if r := m.revs[commit]; r != nil {
		prefix = r.install.Prefix
	} else if prefix = m.built[commit]; prefix == "" {
		in, _, err := m.install(ctx, commit, side)
		if err != nil {
			return "", "", m.diskFault(ctx, err)
		}
		prefix = in.Prefix
		if m.built == nil {
			m.built = map[string]string{}
		}
		m.built[commit] = prefix
	}
	key, err = side.Builder.EntryKey(side.Commit)
	return prefix, key, err
}

// install returns the server of side (subject commit): the installed one at
// its Basedir, or its revision built (once; the build cache keeps it), with
// the build's code layouts, or the entry keeping its link inputs, when its
// Builder makes them (Layouts).
// Errors: an *bisect.UntestableError for a revision that does not build or
// whose build holds no usable server; an installed server that is not one
// is the user's (bisect.ErrUsage); the machine's as they are.
func (m *Measurer) install(ctx context.Context, commit string, side Side) (*serverctl.Install, codeLayouts, error) {
	if side.Basedir != "" {
		in, err := serverctl.FindInstall(ctx, side.Basedir)
		if err != nil {
			return nil, codeLayouts{}, bisect.Usagef("installed server %s: %v", side.Basedir, err)
		}
		return in, codeLayouts{}, nil
	}
	if side.Tarball != nil {
		in, err := m.unpack(ctx, commit, *side.Tarball)
		return in, codeLayouts{}, err
	}
	began := time.Now()
	b := side.Builder
	rec := BuildRecord{Commit: side.Commit, Recipe: b.Recipe.Hash(), Cached: b.Cached(side.Commit)}
	report := func(err error) {
		if m.cfg.OnBuild == nil || ctx.Err() != nil {
			return
		}
		rec.Duration = time.Since(began)
		if err != nil {
			rec.Error = err.Error()
		}
		m.cfg.OnBuild(rec)
	}
	prefix, err := b.Build(ctx, side.Commit)
	if err != nil {
		report(err)
		return nil, codeLayouts{}, judge(ctx, commit, failure{step: stepBuild, err: err})
	}
	in, err := serverctl.FindInstall(ctx, prefix)
	if err != nil {
		report(err)
		return nil, codeLayouts{}, judge(ctx, commit, failure{step: stepFind, err: err})
	}
	rec.Prefix, rec.Flavor, rec.Version = prefix, string(in.Flavor), in.Version.String()
	report(nil)
	var lay codeLayouts
	if b.Layouts == build.LayoutPerRun {
		if !build.HasLinkKit(prefix) {
			return nil, lay, fmt.Errorf("build %.10s: no link inputs in %s for --layouts run", side.Commit, prefix)
		}
		lay.kit = prefix
	}
	if b.Layouts >= 2 {
		bins := build.Layouts(prefix)
		if len(bins) < b.Layouts {
			return nil, lay, fmt.Errorf("build %.10s: %d code layouts in %s, want %d", side.Commit, len(bins), prefix, b.Layouts)
		}
		for _, bin := range bins[:b.Layouts] {
			lay.layouts = append(lay.layouts, in.WithServer(bin))
		}
	}
	return in, lay, nil
}

// unpack returns the server of a release's binary tarball, unpacked once
// under the state directory. Errors (usage, naming the tarball): it does
// not unpack, holds no server, or its server reports another flavor or
// version than its name; the machine's (a full disk) as they are.
func (m *Measurer) unpack(ctx context.Context, commit string, t build.Tarball) (*serverctl.Install, error) {
	dir, took, err := t.Unpack(ctx, m.cfg.StateDir)
	switch {
	case errors.Is(err, build.ErrBadTarball):
		return nil, bisect.Usagef("binary tarball %v: replace it with a whole one and resume; %s", err, buildInstead(commit))
	case err != nil:
		return nil, err
	}
	if took > 0 {
		m.logf("prepare %s: unpacked %s in %.1fs (nothing built)", m.label(commit), t.Name(), took.Seconds())
	}
	in, err := serverctl.FindInstall(ctx, dir)
	if err != nil {
		return nil, bisect.Usagef("binary tarball %s: %v; replace it with the release's own tarball and resume; %s", t.Path, err, buildInstead(commit))
	}
	want := t.Version
	if i := strings.IndexByte(want, '-'); i > 0 {
		want = want[:i] // Percona's release number is not in --version's number
	}
	if string(in.Flavor) != t.Flavor || in.Version.String() != want {
		return nil, bisect.Usagef("binary tarball %s: its server reports %q, not %s %s as its name says; replace it with that release's tarball and resume; %s", t.Path, in.VersionLine, t.Flavor, t.Version, buildInstead(commit))
	}
	return in, nil
}

// buildInstead is the other way out of a refused tarball of commit.
func buildInstead(commit string) string {
	return fmt.Sprintf("or move it out of the directory, perfbisect reset, and start again (%.10s is then built)", commit)
}

// makeSnapshot initialises the datadir of rev (an install of commit) in snap,
// loads the workload's tables with a server of its own and stops it: the
// snapshot every run restores. Errors as for Measure; a server killed from
// outside is errKilled (the caller prepares again).
func (m *Measurer) makeSnapshot(ctx context.Context, commit string, in *serverctl.Install, snap string, rev *revision) error {
	return m.watchDisk(ctx, func(ctx context.Context) error { return m.loadSnapshot(ctx, commit, in, snap, rev) })
}

// watchDisk runs f with a context that ends when the state directory's disk
// stays full (diskfault.Watch): a server that runs out of space waits for
// it instead of failing. The error is then the disk's *diskfault.Error,
// whatever f returned; so is a failure of f while the watch saw the disk
// full (the server's exit may have freed the space that says so).
func (m *Measurer) watchDisk(ctx context.Context, f func(context.Context) error) error {
	w := diskfault.Watch(ctx, m.cfg.StateDir)
	defer w.Stop()
	err := f(w.Context())
	if ctx.Err() != nil {
		return err
	}
	if de := diskfault.Cause(w.Context()); de != nil {
		return de
	}
	if de := w.Seen(); err != nil && de != nil {
		de.Err = err
		return m.diskFault(ctx, de)
	}
	return err
}

// loadSnapshot initialises the snapshot's datadir and loads the workload's
// tables into it with a server of its own (makeSnapshot runs it under the
// disk's watch).
func (m *Measurer) loadSnapshot(ctx context.Context, commit string, in *serverctl.Install, snap string, rev *revision) error {
	faultpoint.Hit("datadir")
	m.logf("prepare %s: %s %s, initialise datadir and prepare %s", m.label(commit), in.Flavor, in.Version, m.cfg.Workload.Name())
	if err := serverctl.RemoveDatadir(rev.snapshot); err != nil {
		return err
	}
	_ = os.RemoveAll(snap)
	o := serverctl.Options{Install: in, OptionFile: rev.side.OptionFile.Path, RunDir: filepath.Join(snap, "prepare"), Datadir: rev.snapshot, Owner: m.cfg.StateDir,
		StartTimeout: m.cfg.StartTimeout}
	// The bootstrap and the load are heavy work: not during another
	// perfbisect's measured window.
	unlock, err := m.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := serverctl.Initialize(ctx, o); err != nil {
		return judge(ctx, commit, failure{step: stepInit, err: err})
	}
	srv, err := serverctl.Start(ctx, o)
	if err != nil {
		return judge(ctx, commit, failure{step: stepStart, err: err})
	}
	defer srv.Kill()
	perr := m.cfg.Workload.Prepare(ctx, workloadConn(srv))
	died := srv.Died()
	var serr error
	if died == nil {
		if perr == nil && !m.cfg.Unsettled {
			m.settle(ctx, srv)
		}
		serr = srv.Stop(ctx) // stopped, not killed, whatever the load did: its log ends as a server's does
	}
	if err := judge(ctx, commit, failure{step: stepLoad, err: perr, died: died}); err != nil {
		return err
	}
	if err := judge(ctx, commit, failure{step: stepStopAfterLoad, err: serr}); err != nil {
		return err
	}
	// The data is the user's: the owner's alone, whatever umask the
	// initialiser wrote it with (mariadb-install-db leaves
	// mysql_upgrade_info 0644).
	if err := private(snap); err != nil {
		return err
	}
	// The snapshot's files reach the disk before the marker that says it is
	// complete.
	if err := syncfs.Dir(snap); err != nil {
		return err
	}
	return renameio.WriteFile(filepath.Join(snap, "complete"), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o600)
}

// settle leaves the snapshot as a long-running server would hold its data,
// the same whatever the timing of the load (docs/measurements.md has what
// each step removed):
//   - ANALYZE TABLE on every table of the workload's database: InnoDB's
//     persistent statistics are otherwise whatever its background thread
//     sampled while the load ran, and the optimizer sizes its work by them;
//     MariaDB's engine-independent statistics are left out (use_stat_tables
//     NEVER: they read whole tables; other servers refuse the setting, and
//     that refusal is ignored);
//   - innodb_fast_shutdown=0: InnoDB purges the load's undo history and
//     merges its change buffer before it stops, instead of in a run's
//     window.
//
// Each step that fails is noted and the other still done; the snapshot is
// kept either way.
func (m *Measurer) settle(ctx context.Context, srv *serverctl.Server) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	db, err := sql.Open("mysql", srv.DSN(""))
	if err != nil {
		m.logf("note: the snapshot is kept as the load left it (%v): its optimizer statistics and background work may vary", err)
		return
	}
	defer db.Close()
	if err := analyze(ctx, db, workloadConn(srv).DB); err != nil {
		m.logf("note: the snapshot keeps the optimizer statistics the load left (%v): they may differ from one snapshot to the next", err)
	}
	if _, err := db.ExecContext(ctx, "SET GLOBAL innodb_fast_shutdown = 0"); err != nil {
		m.logf("note: the snapshot's server keeps its fast shutdown (%v): background work the load left may run in the windows", err)
	}
}

// settleTimeout bounds settle's statements (not the slow shutdown that
// follows): a server that hangs in them would otherwise hold the machine
// lock.
const settleTimeout = 10 * time.Minute

// quoteName is an identifier quoted for SQL.
func quoteName(n string) string { return "`" + strings.ReplaceAll(n, "`", "``") + "`" }

// analyze runs ANALYZE TABLE on every base table of schema, engine
// statistics only, on one connection of db (the session setting must hold
// for the ANALYZE). A schema without tables is an error: there was nothing
// to settle.
func analyze(ctx context.Context, db *sql.DB, schema string) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	rows, err := c.QueryContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME", schema)
	if err != nil {
		return err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		names = append(names, quoteName(schema)+"."+quoteName(n))
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("no table in database %s", schema)
	}
	_, _ = c.ExecContext(ctx, "SET SESSION use_stat_tables = 'NEVER'") // MariaDB's; other servers refuse it
	// ANALYZE TABLE reports a table's failure as a result row, not an error.
	res, err := c.QueryContext(ctx, "ANALYZE TABLE "+strings.Join(names, ", "))
	if err != nil {
		return err
	}
	defer res.Close()
	var failed []string
	for res.Next() {
		var table, op, typ string
		var text sql.NullString
		if err := res.Scan(&table, &op, &typ, &text); err != nil {
			return err
		}
		if strings.EqualFold(typ, "error") {
			failed = append(failed, table+": "+text.String)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("ANALYZE TABLE: %s", strings.Join(failed, "; "))
	}
	return res.Err()
}

// private takes the group's and others' permissions off every file and
// directory under dir.
func private(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			return os.Chmod(path, perm&^0o077)
		}
		return nil
	})
}

// DefaultSnapshotBudget is the disk space prepared datadirs may take in a
// state directory unless Config.SnapshotBudget says otherwise: 10 GiB.
const DefaultSnapshotBudget = 10 << 30

// evictSnapshots deletes the least recently used prepared datadirs of the state
// directory (complete ones; their "complete" file's time is the last use) until
// the rest fit in the snapshot budget. The snapshots this Measurer uses are
// kept even over budget (a note says so).
func (m *Measurer) evictSnapshots() {
	budget := m.cfg.SnapshotBudget
	if budget == 0 {
		budget = DefaultSnapshotBudget
	}
	inUse := map[string]bool{}
	for _, r := range m.revs {
		inUse[filepath.Dir(r.snapshot)] = true
	}
	dirs, _ := filepath.Glob(filepath.Join(m.cfg.StateDir, "datadirs", "*"))
	var snaps []lru.Entry
	var total int64
	var sizer lru.Sizer
	for _, d := range dirs {
		st, err := os.Stat(filepath.Join(d, "complete"))
		if err != nil {
			continue // being prepared (or a failed preparation, kept as evidence)
		}
		e := lru.Entry{Dir: d, Used: st.ModTime(), Bytes: sizer.Bytes(d)}
		total += e.Bytes
		snaps = append(snaps, e)
	}
	keep := func(e lru.Entry) bool { return inUse[e.Dir] }
	total = lru.Evict(snaps, budget, keep, func(sn lru.Entry) bool {
		// Only marked datadirs are deleted (snapshots of perfbisect before the
		// mark stay: remove them by hand).
		if err := serverctl.RemoveDatadir(filepath.Join(sn.Dir, "data")); err != nil {
			m.logf("note: evict datadir snapshot %s: %v", sn.Dir, err)
			return false
		}
		if err := os.RemoveAll(sn.Dir); err != nil {
			m.logf("note: evict datadir snapshot %s: %v", sn.Dir, err)
			return false
		}
		m.logf("evicted datadir snapshot %s (%s, last used %s): snapshots over the %s budget",
			filepath.Base(sn.Dir), humanize.IBytes(uint64(sn.Bytes)), sn.Used.Format(time.DateTime), humanize.IBytes(uint64(budget)))
		return true
	})
	if total > budget {
		m.logf("note: the datadir snapshots this session uses take %s, over the %s budget (%s)", humanize.IBytes(uint64(total)), humanize.IBytes(uint64(budget)), m.setting("snapshot-cache-size"))
	}
}

// snapshotKey names a prepared datadir: the server (a build: commit and
// recipe; an installed server: its basedir and its binary's size and time),
// the server options the side's option file gives this server (includes
// resolved by the server's own reader, so an edited included file is a new
// snapshot) and the workload's data-shaping options.
func (m *Measurer) snapshotKey(ctx context.Context, commit string, side Side, in *serverctl.Install) (string, error) {
	h := sha256.New()
	// "datadir 3": datadirs carry serverctl.DatadirMark and are settled
	// (settle); older snapshots are not reused. An unsettled one
	// (Config.Unsettled) is never another's.
	if side.installed() {
		fi, err := os.Stat(in.Server)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "datadir 3\x00installed\x00%s\x00%d\x00%d\x00", in.Server, fi.Size(), fi.ModTime().UnixNano())
	} else {
		fmt.Fprintf(h, "datadir 3\x00%s\x00%s\x00", side.Commit, side.Builder.Recipe.Hash())
	}
	if !side.OptionFile.IsZero() {
		if err := os.MkdirAll(m.cfg.StateDir, 0o700); err != nil {
			return "", err
		}
		args, err := serverctl.UserOptions(ctx, in, side.OptionFile.Path, m.cfg.StateDir)
		if err != nil {
			return "", err
		}
		for _, a := range args {
			fmt.Fprintf(h, "%s\x00", a)
		}
	}
	fmt.Fprintf(h, "\x00%s", m.cfg.Workload.DataKey())
	if m.cfg.Unsettled {
		fmt.Fprint(h, "\x00unsettled")
	}
	return commit[:min(12, len(commit))] + "-" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

// run is one attempt at a measurement under the disk's watch (attempt); a
// failed attempt's datadir copy goes. It returns what the machine did besides
// during the window.
func (m *Measurer) run(ctx context.Context, commit string, rev *revision) (bisect.Run, disturbance, error) {
	var d disturbance
	var r bisect.Run
	err := m.watchDisk(ctx, func(ctx context.Context) (err error) {
		r, err = m.attempt(ctx, commit, rev, &d)
		return err
	})
	if err != nil && ctx.Err() == nil {
		// The disk is judged before the copy goes: dropping it frees the
		// space that says the disk was full.
		err = m.diskFault(ctx, err)
		m.dropFailedDatadir(commit)
	}
	return r, d, err
}

// dropFailedDatadir removes the datadir copy of the run of commit that just
// failed: its logs stay in the run directory as the evidence the error
// names, but a copy of the tables (hundreds of MB on a real workload) is no
// evidence, unless the server dumped a core there, which is kept.
func (m *Measurer) dropFailedDatadir(commit string) {
	data := filepath.Join(m.runDir(commit), "data")
	if cores, _ := filepath.Glob(filepath.Join(data, "core*")); len(cores) > 0 {
		m.logf("note: the failed run's core dump is kept: %s", strings.Join(cores, " "))
		return
	}
	if err := serverctl.RemoveDatadir(data); err != nil {
		m.logf("note: %v", err)
	}
}

// attempt is one process-level measurement: restore the snapshot, start, warm
// up, measure, stop. It sets *d once the window's load is known. A failed step
// is judged (judge) where it fails.
func (m *Measurer) attempt(ctx context.Context, commit string, rev *revision, d *disturbance) (bisect.Run, error) {
	unlock, err := m.lock(ctx)
	if err != nil {
		return bisect.Run{}, err
	}
	defer unlock()
	m.runN++
	began := time.Now()
	in, layout := rev.runInstall(m.counted[commit])
	if rev.kit != "" {
		bin, seed, err := m.runLayout(ctx, rev.kit)
		if err != nil {
			return bisect.Run{}, err
		}
		defer os.RemoveAll(filepath.Dir(bin))
		in, layout = rev.install.WithServer(bin), bisect.LayoutSeed(int64(seed))
	}
	o, err := m.freshRunDir(commit, rev, in)
	if err != nil {
		return bisect.Run{}, err
	}
	srv, err := m.startForRun(ctx, commit, rev, o)
	if err != nil {
		return bisect.Run{}, err
	}
	defer srv.Kill()
	overridden := m.noteOverridden(srv, rev)
	w := &window{probe: m.cfg.Probe, statements: m.cfg.Probe != nil && m.cfg.Statements, commit: commit, srv: srv}
	unpin, err := serverctl.PinProcess(m.cfg.ClientCPUs)
	if err != nil {
		return bisect.Run{}, err
	}
	serverCPUs, _ := serverctl.ProcessCPUs(srv.Pid())
	clientCPUs, _ := serverctl.ProcessCPUs(os.Getpid())
	res, berr := m.cfg.Workload.Run(ctx, workloadConn(srv), w.hooks(ctx))
	unpin()
	if err := judge(ctx, commit, failure{step: stepWorkload, err: berr, died: srv.Died()}); err != nil {
		return bisect.Run{}, err
	}
	rss, _ := srv.PeakRSS()
	if err := judge(ctx, commit, failure{step: stepStop, err: srv.Stop(ctx)}); err != nil {
		return bisect.Run{}, err
	}
	if w.cpuErr != nil {
		return bisect.Run{}, fmt.Errorf("server cpu time: %w", w.cpuErr)
	}
	if w.probeErr != nil {
		return bisect.Run{}, w.probeErr
	}
	opts, _ := os.ReadFile(filepath.Join(o.RunDir, serverctl.EffectiveArgsFile))
	// A failed run keeps its directory's logs as evidence (run).
	if err := serverctl.RemoveDatadir(o.Datadir); err != nil {
		return bisect.Run{}, err
	}
	_ = os.RemoveAll(o.RunDir)
	r := bisect.Run{Commit: commit, TPS: res.TPS, QPS: res.QPS, LatencyPct: res.LatencyPct, Events: res.Events,
		LatencyP95: res.LatencyP95, LatencyP99: res.LatencyP99,
		Window: res.Window, Started: began, Wall: time.Since(began), ServerOptions: serverctl.RedactOptions(string(opts)), // never a secret in the store
		PeakRSS: rss, Facts: m.facts(rev.install)}
	if layout != "" {
		r.Facts[bisect.FactLayout] = layout
	}
	if t := rev.side.Tarball; t != nil {
		if key, err := t.Key(); err == nil {
			r.Facts[FactTarball] = key // which content of the tarball it measured
		}
	}
	for _, iv := range res.Intervals {
		r.Series = append(r.Series, bisect.Second{At: iv.At, TPS: iv.TPS, QPS: iv.QPS, Pct: iv.P95})
	}
	if len(overridden) > 0 {
		r.Facts["overridden"] = strings.Join(overridden, "; ")
	}
	r.Facts["server_cpus"], r.Facts["client_cpus"] = serverCPUs, clientCPUs
	if w.probed != "" {
		r.Facts[ProbeFact] = w.probed
		if len(res.Statements) > 0 {
			if err := writeStatements(filepath.Join(w.probed, StatementsFile), res.Statements); err != nil {
				return bisect.Run{}, err
			}
		}
	}
	cpu := w.cpu1 - w.cpu0
	if res.Events > 0 {
		r.CPUPerTxn = cpu / time.Duration(res.Events)
	}
	*d = m.windowLoad(commit, res, w, &r)
	m.noteEmulated(rev, res, &r)
	if w.statusErr == nil && w.status1 != nil {
		r.Status = serverctl.StatusDelta(w.status0, w.status1)
	} else if w.statusErr != nil {
		m.logf("run %s: no GLOBAL STATUS for the window: %v", m.label(commit), w.statusErr)
	}
	if no, ok := res.Kind("new_order"); ok && no.Events > 0 {
		r.TPMC = res.TPMC
		r.CPUPerNewOrder = cpu / time.Duration(no.Events)
	}
	return r, nil
}

// freshRunDir makes commit's run directory anew (what an earlier run of this
// process left there goes) and returns the options of server in for it.
func (m *Measurer) freshRunDir(commit string, rev *revision, in *serverctl.Install) (serverctl.Options, error) {
	dir := m.runDir(commit)
	o := serverctl.Options{Install: in, OptionFile: rev.side.OptionFile.Path, RunDir: dir, Datadir: filepath.Join(dir, "data"),
		Owner: m.cfg.StateDir, CPUs: m.cfg.ServerCPUs, StartTimeout: m.cfg.StartTimeout}
	if m.cfg.Probe != nil {
		o.Settings = m.cfg.ProbeSettings
	}
	if err := serverctl.RemoveDatadir(o.Datadir); err != nil {
		return o, err
	}
	_ = os.RemoveAll(dir)
	return o, os.MkdirAll(dir, 0o700)
}

// startForRun gives the run its datadir (the snapshot's copy, or with
// Config.FreshDatadir a new one whose tables the started server loads, as a
// sysbench prepare + run would) and starts its server.
func (m *Measurer) startForRun(ctx context.Context, commit string, rev *revision, o serverctl.Options) (*serverctl.Server, error) {
	if m.cfg.FreshDatadir {
		if err := serverctl.Initialize(ctx, o); err != nil {
			return nil, judge(ctx, commit, failure{step: stepInit, err: err})
		}
	} else if err := serverctl.CopyDatadir(rev.snapshot, o.Datadir); err != nil {
		return nil, fmt.Errorf("restore datadir snapshot of %.10s: %w", commit, err)
	}
	srv, err := serverctl.Start(ctx, o)
	if err != nil {
		return nil, judge(ctx, commit, failure{step: stepStart, err: err})
	}
	if m.cfg.FreshDatadir {
		if perr := m.cfg.Workload.Prepare(ctx, workloadConn(srv)); perr != nil {
			died := srv.Died() // before the kill, which is no death of its own
			srv.Kill()
			return nil, judge(ctx, commit, failure{step: stepLoad, err: perr, died: died})
		}
	}
	return srv, nil
}

// noteOverridden returns the settings of the option file perfbisect replaced
// in srv (saying so once per Measurer).
func (m *Measurer) noteOverridden(srv *serverctl.Server, rev *revision) []string {
	var overridden []string
	for _, o := range srv.Overridden() {
		overridden = append(overridden, o.String())
	}
	if len(overridden) > 0 && !m.overrideNoted {
		m.overrideNoted = true
		m.logf("note: perfbisect replaces %d setting(s) of %s (private files, socket and port, loopback only):\n  %s",
			len(overridden), rev.side.OptionFile.Path, strings.Join(overridden, "\n  "))
	}
	return overridden
}

// noteEmulated stores the statements the server refused to prepare (sent as
// text instead) in r's facts, saying so once per Measurer.
func (m *Measurer) noteEmulated(rev *revision, res *bench.Result, r *bisect.Run) {
	if len(res.Emulated) == 0 {
		return
	}
	r.Facts["sent_as_text"] = strings.Join(res.Emulated, "; ")
	if !m.emulatedNoted {
		m.emulatedNoted = true
		m.logf("note: %s %s refuses to prepare %s (error 1295): sent as text in every transaction, as sysbench does",
			rev.install.Flavor, rev.install.Version, strings.Join(res.Emulated, ", "))
	}
}

// windowLoad stores what the machine did besides the run during its window
// in r's facts (other processes' CPU, steal, the load average, the client's
// CPU per transaction, the server's threads' wait for a CPU, its cgroup's
// throttled time), notes a busy machine, and returns the disturbance that
// decides whether the run counts (with neighbourSign's reading of the signs,
// against the revision's runs). r.CPUPerTxn is set.
func (m *Measurer) windowLoad(commit string, res *bench.Result, w *window, r *bisect.Run) disturbance {
	other, steal, loadavg, ok := w.load.other(w.cpu1 - w.cpu0)
	if !ok {
		return disturbance{signs: unknownSigns}
	}
	inProcess := m.cfg.Workload.ClientInProcess()
	client := w.load.self1 - w.load.self0
	if !inProcess {
		client = res.ClientCPU // sysbench's own, 0 when unread
		other = max(other-client, 0)
	}
	// Without sysbench's CPU, other processes' includes it.
	clientKnown := inProcess || client > 0
	otherKey := "other_cpu_s"
	if !clientKnown {
		otherKey = "other_cpu_s_with_sysbench"
	}
	r.Facts[otherKey] = fmt.Sprintf("%.2f", other.Seconds())
	r.Facts["steal_s"] = fmt.Sprintf("%.2f", steal.Seconds())
	r.Facts["loadavg_1m"] = fmt.Sprintf("%.2f", loadavg)
	var clientPerTxn, serverPerTxn float64
	if res.Events > 0 {
		serverPerTxn = float64(r.CPUPerTxn) / 1e3
		if clientKnown {
			// The client's CPU per transaction does the same work whatever
			// the revision: when it rises with the server's, the machine
			// itself was slower in this window (a neighbour on the host),
			// which steal and other_cpu_s miss.
			clientPerTxn = float64(client/time.Duration(res.Events)) / 1e3
			r.Facts["client_cpu_us_txn"] = fmt.Sprintf("%.1f", clientPerTxn)
		}
	}
	d := disturbance{steal: steal, other: other, capacity: res.Window * time.Duration(serverctl.MachineCPUs())}
	d.signs = w.sched.signs(res.Window, clientPerTxn, serverPerTxn)
	if d.signs.waitShare >= 0 {
		r.Facts["server_wait_share"] = fmt.Sprintf("%.3f", d.signs.waitShare)
	}
	if d.signs.throttled >= 0 {
		r.Facts["throttled_s"] = fmt.Sprintf("%.2f", d.signs.throttled.Seconds())
	}
	if !clientKnown || m.cfg.Probe != nil {
		// sysbench's CPU, or the profiler's (perf), is this run's own.
		d.other = 0
	}
	if m.cfg.Probe == nil {
		d.why, d.kind = neighbourSign(d.signs, m.signs[commit], m.allSigns)
		if th, c := d.signs.throttled, d.signs.capacity; d.why == "" && th > 0 && float64(th) > ThrottledShare*float64(c) && !m.quotaNoted {
			m.quotaNoted = true
			m.logf("note: run %s: the server's CPU cgroup is throttled in most of the revision's runs (%.2f of the %.1f CPU-seconds it could have had): a CPU quota (cpu.max, cpu.cfs_quota_us) is part of what every run measures; lift it, or give the server fewer threads (said once)",
				m.label(commit), th.Seconds(), c.Seconds())
		}
	}
	// More than a tenth of a CPU over the window: the machine was not
	// idle (not said when sysbench's own CPU time is in it).
	if other > res.Window/10 && clientKnown && m.cfg.Probe == nil {
		m.logf("note: run %s: other processes used %.2fs of CPU during the %.1fs window (load average %.2f): the machine was not idle",
			m.label(commit), other.Seconds(), res.Window.Seconds(), loadavg)
	}
	if steal > res.Window/10 && !m.stealNoted {
		m.stealNoted = true
		m.logf("note: run %s: the hypervisor took %.2fs of CPU time from this machine during the %.1fs window (steal): numbers vary with the host's load (said once; every run stores steal_s)",
			m.label(commit), steal.Seconds(), res.Window.Seconds())
	}
	return d
}

// window is what a run watches over its measured window: the server's CPU
// time and GLOBAL STATUS at both edges (a probe, when set, reads the status
// itself), the probe, and what other processes did (loadProbe).
type window struct {
	probe      func(ctx context.Context, key string, srv *serverctl.Server) (end func() (string, error), err error)
	statements bool // Config.Statements, for a probed run
	commit     string
	srv        *serverctl.Server

	cpu0, cpu1       time.Duration
	cpuErr           error
	status0, status1 map[string]int64
	statusErr        error
	load             loadProbe
	sched            schedProbe
	probeEnd         func() (string, error)
	probed           string
	probeErr         error
}

// hooks are the workload's callbacks at the window's edges.
func (w *window) hooks(ctx context.Context) bench.Hooks {
	return bench.Hooks{
		Statements: w.statements,
		MeasureStart: func() {
			faultpoint.Hit("run")
			if w.probe != nil {
				w.probeEnd, w.probeErr = w.probe(ctx, w.commit, w.srv)
			}
			w.cpu0, w.cpuErr = w.srv.CPUTime()
			w.load.begin()
			w.sched.begin(w.srv.Pid())
			if w.probe == nil {
				w.status0, w.statusErr = w.srv.GlobalStatus(ctx)
			}
		},
		MeasureEnd: func() {
			if w.probeEnd != nil {
				w.probed, w.probeErr = w.probeEnd()
			}
			c, err := w.srv.CPUTime()
			w.cpu1 = c
			w.load.end()
			w.sched.end(w.srv.Pid())
			if w.cpuErr == nil {
				w.cpuErr = err
			}
			if w.statusErr == nil && w.probe == nil {
				w.status1, w.statusErr = w.srv.GlobalStatus(ctx)
			}
		},
	}
}

// writeStatements writes a probed run's statement times (Config.Statements)
// to path, readable by the owner alone like the rest of the run.
func writeStatements(path string, sts []bench.StatementTime) error {
	b, err := json.Marshal(sts)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// workloadConn is where the workload connects to srv: as root, database
// sbtest.
func workloadConn(srv *serverctl.Server) bench.Connection {
	return bench.Connection{Socket: srv.Socket(), User: "root", DB: "sbtest"}
}

// logRun prints the line of a counted run (one per run the session gets:
// tests and users count them). A probed run's line begins "profiled run"
// (or Config.ProbeLabel): it is not one of the session's runs.
func (m *Measurer) logRun(commit string, r bisect.Run) {
	what := "run"
	switch {
	case m.cfg.Probe != nil && m.cfg.ProbeLabel != "":
		what = m.cfg.ProbeLabel
	case m.cfg.Probe != nil:
		what = "profiled run"
	}
	tpmc := ""
	if r.TPMC > 0 {
		tpmc = fmt.Sprintf(", %.0f tpmC, server cpu %.0fus/New-Order", r.TPMC, float64(r.CPUPerNewOrder)/1e3)
	}
	m.logf("%s %s: %.1f tps, %.1f qps, p%g %.2fms, server cpu %.0fus/txn%s (%.1fs)", what, m.label(commit), r.TPS, r.QPS,
		m.cfg.Workload.Percentile(), float64(r.LatencyPct)/1e6, float64(r.CPUPerTxn)/1e3, tpmc, r.Wall.Seconds())
}

// facts describes the machine and the server of a run (read once per
// Measurer: they do not change within a session).
func (m *Measurer) facts(in *serverctl.Install) map[string]string {
	if m.host == nil {
		h := serverctl.HostFacts(filepath.Join(m.cfg.StateDir, "runs"))
		m.host = map[string]string{"kernel": h.Kernel, "cpu_model": h.CPUModel, "cpus": fmt.Sprint(h.CPUs),
			"governor": h.Governor, "mem_bytes": fmt.Sprint(h.MemBytes), "datadir_fs": h.DatadirFS}
		if h.DatadirFS == "tmpfs" {
			m.logf("note: the datadirs (%s) are on tmpfs, which makes fsync free: write-heavy regressions may not show", filepath.Join(m.cfg.StateDir, "runs"))
		}
	}
	out := map[string]string{"server": fmt.Sprintf("%s %s", in.Flavor, in.Version)}
	for k, v := range m.host {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

func (m *Measurer) logf(format string, args ...any) {
	if m.cfg.Log != nil {
		fmt.Fprintf(m.cfg.Log, format+"\n", args...)
	}
}

// loadProbe measures what other processes did to a run's window: the
// machine's busy CPU time less this process's and the server's, and the load
// average at its end.
type loadProbe struct {
	busy0, steal0, self0, busy1, steal1, self1 time.Duration
	loadavg                                    float64
	err                                        error
}

func (p *loadProbe) begin() {
	var err1, err2 error
	p.busy0, p.steal0, err1 = serverctl.MachineBusy()
	p.self0, err2 = serverctl.SelfCPU()
	p.err = errors.Join(err1, err2)
}

func (p *loadProbe) end() {
	var err1, err2, err3 error
	p.busy1, p.steal1, err1 = serverctl.MachineBusy()
	p.self1, err2 = serverctl.SelfCPU()
	p.loadavg, err3 = serverctl.LoadAverage()
	p.err = errors.Join(p.err, err1, err2, err3)
}

// other returns the CPU time processes other than perfbisect and the server
// (which used server of CPU over the window) took during the window, at the
// kernel's 10 ms resolution (never below 0), the time the hypervisor took
// (steal), and the load average; ok false when something could not be read.
func (p *loadProbe) other(server time.Duration) (other, steal time.Duration, loadavg float64, ok bool) {
	if p.err != nil || p.busy1 == 0 {
		return 0, 0, 0, false
	}
	other = (p.busy1 - p.busy0) - (p.self1 - p.self0) - server
	return max(other, 0), p.steal1 - p.steal0, p.loadavg, true
}
