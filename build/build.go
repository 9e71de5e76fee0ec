// Package build turns a commit of a server's source repository into an installed
// server tree. It checks the source out into a scratch directory owned by
// perfbisect (never the user's work tree; submodules from the repository's
// .git/modules), configures it into an out-of-tree CMake build directory per
// recipe (ccache as compiler launcher when installed, distcc behind it when
// configured), builds with `cmake --build` incrementally where that gives
// what a clean build gives and in an emptied build directory otherwise
// (reuse.go),
// installs with DESTDIR into a per-commit cache entry keyed by (commit,
// recipe), keeps only what running the server needs (hard-linking files that
// did not change since the previous entry), and evicts least recently used
// entries beyond a size budget. Built-in presets make lean MariaDB and MySQL
// builds, chosen from the tree's flavor and version. It knows nothing about
// benchmarks.
package build

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"time"

	humanize "github.com/dustin/go-humanize"
	git "github.com/go-git/go-git/v5"
	"github.com/google/renameio/v2"

	"github.com/perfbisect/perfbisect/internal/faultpoint"
	"github.com/perfbisect/perfbisect/internal/reap"
	"github.com/perfbisect/perfbisect/internal/syncfs"
)

// ErrNoCMake is returned (wrapped) when cmake is not installed: a machine
// problem, not the revision's.
var ErrNoCMake = errors.New("cmake not found in PATH (install it: apt-get install cmake)")

// Recipe says how a revision is built. Builds with the same effective recipe
// (the recipe plus the preset's arguments for the tree's version) share a build
// directory and cache entries.
type Recipe struct {
	// Preset picks built-in CMake arguments: "auto" or "" (by the tree's
	// flavor: MariaDB → mariadb, MySQL/Percona → mysql, other trees none),
	// "none", or a name from Presets.
	Preset    string
	CMakeArgs []string // the user's configure arguments, after the preset's (so they win)
	// BuildCmd, when set, replaces configure and build: a shell command (sh -c)
	// run in the build directory with SRC, BUILD_DIR, PREFIX (the fixed install
	// prefix), JOBS and DESTDIR in its environment. InstallCmd, when set,
	// replaces the install (default with BuildCmd: none, BuildCmd installs);
	// either must install into $DESTDIR$PREFIX (or straight into $DESTDIR).
	BuildCmd, InstallCmd string
	Jobs                 int  // parallel build jobs; 0 = number of CPUs
	NoCcache             bool // do not use ccache even when installed
	// DistccHosts, when set, compiles on these distcc hosts (DISTCC_HOSTS
	// syntax, e.g. "localhost/2 build1/8,lzo"): distcc runs behind ccache
	// (CCACHE_PREFIX) or as the compiler launcher without it. It does not
	// change what is built, so it is not part of the recipe's hash.
	DistccHosts string
	// Icecc compiles on the icecream farm of this machine's iceccd (icecc
	// behind ccache, or as the launcher without it); not part of the hash.
	Icecc bool
}

// Hash identifies the recipe as the user gave it (preset name, configure
// arguments, commands, ccache): 12 hex digits of SHA-256.
func (r Recipe) Hash() string {
	parts := append([]string{"preset=" + r.presetName(), "build=" + r.BuildCmd, "install=" + r.InstallCmd, fmt.Sprintf("ccache=%v", !r.NoCcache)}, r.CMakeArgs...)
	return shortHash(parts...)
}

func (r Recipe) presetName() string {
	if r.Preset == "" {
		return "auto"
	}
	return r.Preset
}

func shortHash(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])[:12]
}

// Builder builds revisions of one repository with one recipe under StateDir:
//
//	StateDir/src/                       scratch checkout, reused across revisions
//	StateDir/build-<recipe>/            out-of-tree build directory, reused (configured once)
//	StateDir/installs/<recipe>/<sha>/   installed tree of one revision (the cache)
//	StateDir/logs/<sha>-<recipe>-build.log  configure, build and install output
//
// where <recipe> is the effective recipe's hash (Resolved.Hash).
type Builder struct {
	Repo     *git.Repository
	StateDir string
	Recipe   Recipe
	Log      io.Writer // progress lines ("build 3f2c1a9: configure"); may be nil
	// Warn, when set, gets the machine's problems a build works around (a
	// farm host that does not answer, a shared cache entry that is corrupt
	// or cannot be read or stored) instead of Log: a quiet caller that
	// drops the progress lines still says them.
	Warn io.Writer
	// Raw, when set, receives the build's raw output as it comes (-v).
	Raw io.Writer
	// Progress, when set, is called when a step starts and when the build
	// tool's percentage (make's "[ 45%]", ninja's "[12/345]") changes.
	Progress func(Progress)
	// Timeout bounds one revision's configure, build and install together
	// (0: none); a build past it is killed with its process group and is a
	// *BuildError with TimedOut set.
	Timeout time.Duration
	// CacheBudget bounds the disk space (bytes) of all cached installs under
	// StateDir/installs; least recently used entries beyond it are deleted
	// (never one this Builder returned). 0: DefaultCacheBudget.
	CacheBudget int64
	// RetryFailed builds revisions whose compiler or CMake error an earlier
	// session remembered (--retry-failed-builds: after fixing the machine).
	RetryFailed bool
	// Lock, when set, is held around each configure, build and install step
	// (what: "building 3f2c1a9: build"): the machine-wide lock that keeps a
	// build step out of every measured window on the machine. It returns the
	// function that releases it, or ctx's error.
	Lock func(ctx context.Context, what string) (unlock func(), err error)
	// Layouts, from 2 on, links each build's server again in that many code
	// layouts (relink; --layouts), kept in its install entry (Layouts);
	// LayoutPerRun keeps the server's link inputs instead (LinkLayout). An
	// entry cached without what it asks for is built again.
	Layouts int
	// Shared, when set, is a build cache shared with other state
	// directories and machines (--shared-cache): a revision missing here is
	// fetched from it before it is built, and one built here is stored in it.
	Shared SharedCache
	// SharedReadOnly: builds made here are not stored in Shared (a cache
	// this machine may only read; said once).
	SharedReadOnly bool

	shown    map[string]bool // effective recipes already described to the user
	roNoted  bool            // SharedReadOnly said
	farmDown map[string]bool // distcc hosts (host:port) that did not answer before the last build
	tidied   bool            // interrupted installs of earlier sessions removed
	used     map[string]bool // cache entries returned by this Builder
}

// DefaultCacheBudget is the disk space installed builds may take in a state
// directory unless Builder.CacheBudget says otherwise: 20 GiB.
const DefaultCacheBudget = 20 << 30

// Progress is one update of a build in progress.
type Progress struct {
	Commit  string
	Step    string        // checkout, configure, build, install
	Percent int           // of the build step, from the build tool's output; -1 unknown
	Elapsed time.Duration // since the revision's build began
}

// String is the update in words: "build 3f2c1a9d4e: build 45% (1m12s)"
// (the percentage left out when unknown).
func (bp Progress) String() string {
	s := fmt.Sprintf("build %.10s: %s", bp.Commit, bp.Step)
	if bp.Percent >= 0 {
		s += fmt.Sprintf(" %d%%", bp.Percent)
	}
	return s + fmt.Sprintf(" (%s)", bp.Elapsed.Truncate(time.Second))
}

// BuildError is a revision that did not configure, build or install.
type BuildError struct {
	Commit string
	Step   string // configure, build, install
	Log    string // path of the full build log
	Lines  []string
	Err    error
	// TimedOut: killed at Builder.Timeout (a skip, not remembered: a busier
	// machine may finish it).
	TimedOut bool
	// Machine: the failure is the machine's, not the revision's (a full disk,
	// a compiler killed for memory, a missing tool or package): the session
	// must stop, not skip.
	Machine bool
	// Remembered is the file that records a compiler error, so that later
	// sessions skip the revision without building ("" when not remembered).
	Remembered string
	// Earlier: the failure is an earlier session's, read from Remembered
	// (nothing was built this time).
	Earlier bool
	// Packages are the Debian packages that provide what the build reports
	// missing (from DebianPackages; none when unknown).
	Packages []string
	// Installed are those of Packages that dpkg says are installed: then
	// the tree cannot use the machine's version of them, and installing
	// is not the answer.
	Installed []string
	// Hint says what the machine needs when no Debian package provides it
	// (MySQL 5.7's Boost 1.59): set only with Machine.
	Hint string

	fault fault // whose, as the log says
	// compilerCrashed: the compiler crashed (diagnosis.CompilerCrashed).
	compilerCrashed bool
}

func (e *BuildError) Error() string {
	what := ""
	switch {
	case e.Machine && e.Hint != "":
		what = " (not the revision's fault: " + e.Hint + ", then resume)"
	case e.Machine && len(e.Packages) > 0 && len(e.Installed) == len(e.Packages):
		what = " (not the revision's fault: " + strings.Join(e.Installed, " ") + " is installed, but this tree cannot use the machine's version of it: change the CMake arguments as the error says, then resume)"
	case e.Machine && len(e.Packages) > 0:
		what = " (not the revision's fault: install " + strings.Join(e.Packages, " ") + " (apt-get install " + strings.Join(e.Packages, " ") + "), then resume)"
	case e.Machine:
		what = " (not the revision's fault: fix the machine, then resume)"
	case len(e.Packages) > 0:
		what = " (if the machine lacks " + strings.Join(e.Packages, " ") + ", apt-get install " + strings.Join(e.Packages, " ") + " and resume)"
	case e.Remembered != "" && e.Earlier:
		what = " (remembered from an earlier session: delete " + e.Remembered + " to retry)"
	case e.Remembered != "":
		what = " (remembered: later sessions skip it without building; delete " + e.Remembered + " to retry)"
	}
	// The line that stopped the build first: it is what a user reads.
	s := fmt.Sprintf("%s step of %.10s failed", e.Step, e.Commit)
	if len(e.Lines) > 0 {
		s += ": " + strings.Join(e.Lines, " | ")
	}
	return s + fmt.Sprintf(" (%v; log %s)%s", e.Err, e.Log, what)
}

func (e *BuildError) Unwrap() error { return e.Err }

// Resolved is the recipe in effect for one commit: the preset's arguments
// for the tree's flavor and version followed by the user's.
type Resolved struct {
	Tree   Tree
	Preset string   // "" when none applies
	Notes  []string // why the preset's arguments (one per rule applied)
	Args   []string // every configure argument perfbisect adds (preset, then user)
	Hash   string   // names the build directory and the cache directory
}

// Resolve returns the recipe in effect for commit. Errors: the commit cannot be
// read, or the recipe names an unknown preset.
func (b *Builder) Resolve(commit string) (Resolved, error) {
	t, err := InspectTree(b.Repo, commit)
	if err != nil {
		return Resolved{}, err
	}
	r := Resolved{Tree: t}
	p, err := PresetFor(b.Recipe.Preset, t)
	if err != nil {
		return Resolved{}, err
	}
	if p != nil && b.Recipe.BuildCmd == "" {
		r.Preset = p.Name
		r.Args, r.Notes = p.Args(t)
		if t.Boost != "" {
			r.Notes = append(r.Notes, "the tree's own Boost ("+t.Boost+"), as -DWITH_BOOST")
		}
	}
	r.Args = append(r.Args, b.Recipe.CMakeArgs...)
	r.Hash = shortHash(append([]string{b.Recipe.Hash()}, r.Args...)...)
	return r, nil
}

// InstallDir returns where the installed tree of commit is (or will be)
// cached. Errors as for Resolve.
func (b *Builder) InstallDir(commit string) (string, error) {
	r, err := b.Resolve(commit)
	if err != nil {
		return "", err
	}
	return b.installDir(r, commit), nil
}

// Cached reports whether the build cache holds a complete install of commit
// with this builder's recipe (Build would return it without building).
func (b *Builder) Cached(commit string) bool {
	prefix, err := b.InstallDir(commit)
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(prefix, completeMarker))
	return err == nil && hasLayouts(prefix, b.Layouts)
}

func (b *Builder) installDir(r Resolved, commit string) string {
	return filepath.Join(b.StateDir, "installs", r.Hash, commit)
}

// completeMarker is written last into a cache entry: an entry without it is a
// build that was interrupted and is redone. Its mtime is the entry's last use.
const completeMarker = ".perfbisect-complete"

// configuredMarker in a build directory holds the configure arguments it was
// configured with; a build directory without it is configured (again).
const configuredMarker = ".perfbisect-configured"

// cmakeInputs lists the checkout's files that CMake reads at configure time
// (CMakeLists.txt, *.cmake, *.cmake.in, VERSION, MYSQL_VERSION) and its
// submodules, with their blob hashes, sorted: one line per file.
func cmakeInputs(m manifest) string {
	var lines []string
	for name, key := range m.Files {
		if isCMakeInput(name, key) {
			lines = append(lines, name+" "+key)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// Build returns the install prefix of commit, building it first unless the cache
// already holds it. Errors: ErrNoCMake (wrapped) when cmake is missing; a
// *BuildError when the revision fails to configure, build or install (Machine
// set when the machine is at fault); others for I/O and git problems (a
// submodule whose commit is not in the repository's .git/modules); ctx
// cancellation kills the build's process group.
func (b *Builder) Build(ctx context.Context, commit string) (string, error) {
	start := time.Now()
	r, err := b.Resolve(commit)
	if err != nil {
		return "", err
	}
	prefix := b.installDir(r, commit)
	_, err = os.Stat(filepath.Join(prefix, completeMarker))
	if err == nil && b.Layouts >= 2 && !hasLayouts(prefix, b.Layouts) && HasLinkKit(prefix) {
		// The entry keeps its link inputs: its layouts link from them.
		if lerr := b.layoutsFromKit(ctx, commit, prefix); lerr != nil {
			b.logf("build %.10s: %d code layouts from its link inputs: %v", commit, b.Layouts, lerr)
		}
	}
	if err == nil && !hasLayouts(prefix, b.Layouts) {
		// Layouts are linked from the build's objects, which the build
		// directory holds only right after the build.
		b.logf("build %.10s: cached without %s: building it again to keep them", commit, layoutsText(b.Layouts))
	}
	if err == nil && hasLayouts(prefix, b.Layouts) {
		now := time.Now()
		_ = os.Chtimes(filepath.Join(prefix, completeMarker), now, now) // last use, for eviction
		b.markUsed(prefix)
		b.logf("build %.10s: cached in %s", commit, prefix)
		return prefix, nil
	}
	if b.RetryFailed {
		_ = os.Remove(prefix + ".failed.json")
	}
	if be := b.cachedFailure(prefix, commit); be != nil {
		b.logf("build %.10s: failed in an earlier session", commit)
		return "", be
	}
	if b.Shared != nil {
		unlock := func() {}
		if b.Lock != nil {
			if unlock, err = b.Lock(ctx, fmt.Sprintf("fetching %.10s", commit)); err != nil {
				return "", err
			}
		}
		b.tidy()
		_ = os.RemoveAll(prefix) // incomplete, or without the layouts asked for
		ok := b.fromShared(ctx, r, commit, prefix)
		unlock()
		if ok {
			return prefix, nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
	}
	cmake, err := exec.LookPath("cmake")
	if err != nil && b.Recipe.BuildCmd == "" {
		return "", ErrNoCMake
	}
	b.describe(r)
	// The whole build (checkout, compile, install, the cache's bookkeeping)
	// holds the machine lock: no other perfbisect's measured window runs
	// beside it.
	if b.Lock != nil {
		unlock, err := b.Lock(ctx, fmt.Sprintf("building %.10s", commit))
		if err != nil {
			return "", err
		}
		defer unlock()
		start = time.Now() // the wait for another perfbisect is not the build's time
	}
	b.tidy()
	j, err := b.newJob(r, commit, cmake, prefix, start)
	if err != nil {
		return "", err
	}
	defer j.logf.Close()
	if err := b.compile(ctx, j); err != nil {
		return "", err
	}
	if err := b.install(ctx, j); err != nil {
		return "", err
	}
	switch {
	case b.Shared != nil && b.SharedReadOnly && !b.roNoted:
		b.roNoted = true
		b.logf("build %.10s: not stored in the shared cache %s: it is read-only here (said once)", commit, b.Shared)
	case b.Shared != nil && !b.SharedReadOnly:
		b.toShared(ctx, r, commit, prefix)
	}
	return prefix, nil
}

// job is one revision's build from its checkout: the steps' inputs, the
// install's final place (prefix), the DESTDIR it is installed into first
// (tmp) and the prefix compiled in (fixedPrefix).
type job struct {
	stepsIn
	r                        Resolved
	prefix, tmp, fixedPrefix string
}

// newJob opens the build's log, checks the revision out and sets the
// configure arguments and the environment of its steps.
func (b *Builder) newJob(r Resolved, commit, cmake, prefix string, start time.Time) (*job, error) {
	j := &job{r: r, prefix: prefix, tmp: prefix + ".tmp", fixedPrefix: filepath.Join(b.StateDir, "prefix-"+r.Hash)} // compiled in; installs go to DESTDIR
	j.commit, j.cmake, j.start = commit, cmake, start
	j.src, j.bdir = filepath.Join(b.StateDir, "src"), filepath.Join(b.StateDir, "build-"+r.Hash)
	logDir := filepath.Join(b.StateDir, "logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil { // logs are the user's only (the state directory is 0700 too)
		return nil, err
	}
	if err := os.MkdirAll(j.bdir, 0o755); err != nil {
		return nil, err
	}
	j.logPath = filepath.Join(logDir, commit[:min(12, len(commit))]+"-"+r.Hash+"-build.log")
	j.ccacheLog = strings.TrimSuffix(j.logPath, ".log") + "-ccache.log"
	j.distccLog = strings.TrimSuffix(j.logPath, ".log") + "-distcc.log"
	j.iceccLog = strings.TrimSuffix(j.logPath, ".log") + "-icecc.log"
	logf, err := os.OpenFile(j.logPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	_ = logf.Chmod(0o600) // a log an older perfbisect made 0644
	j.logf = logf
	b.progress(commit, "checkout", -1, start)
	b.logf("build %.10s: checkout", commit)
	n, err := Checkout(b.Repo, commit, j.src)
	if err != nil {
		logf.Close()
		return nil, err
	}
	debug.FreeOSMemory() // what the checkout used is not held through the compile
	fmt.Fprintf(logf, "# checkout %s: %d files written to %s\n# %s\n", commit, n, j.src, r.Tree)
	j.jobs = b.Recipe.Jobs
	if j.jobs <= 0 {
		j.jobs = runtime.NumCPU()
		if hosts, err := ParseDistccHosts(b.Recipe.DistccHosts); err == nil && b.Recipe.DistccHosts != "" {
			j.jobs = max(j.jobs, FarmSlots(hosts)) // as many compiles as the farm takes at once
		}
	}
	for _, d := range []string{prefix, j.tmp} {
		if err := os.RemoveAll(d); err != nil {
			logf.Close()
			return nil, err
		}
	}
	j.configure, j.env = b.configureArgs(j)
	j.recipeLine = strings.Join(j.configure, "\n")
	if b.Recipe.BuildCmd != "" {
		j.recipeLine = "build: " + b.Recipe.BuildCmd + "\ninstall: " + b.Recipe.InstallCmd
	}
	j.files = readManifest(j.src).Files
	return j, nil
}

// configureArgs returns cmake's configure arguments and the steps'
// environment: the compiler launchers (ccache, with distcc behind it when
// the recipe names distcc hosts), the tree's own Boost, the preset's and the
// user's arguments.
func (b *Builder) configureArgs(j *job) (configure, env []string) {
	env = reap.Mark(os.Environ(), b.StateDir) // a later session can find our leftovers
	env = append(env, "DESTDIR="+j.tmp, "SRC="+j.src, "BUILD_DIR="+j.bdir, "PREFIX="+j.fixedPrefix, fmt.Sprintf("JOBS=%d", j.jobs))
	configure = []string{"-S", j.src, "-B", j.bdir, "-DCMAKE_INSTALL_PREFIX=" + j.fixedPrefix}
	ccache, _ := exec.LookPath("ccache")
	if b.Recipe.NoCcache {
		ccache = ""
	}
	// The farm's compiler launcher (distcc or icecc), behind ccache when
	// it runs, each logging every compile beside the build log.
	farm := ""
	switch {
	case b.Recipe.DistccHosts != "":
		farm = "distcc"
		env = append(env, "DISTCC_HOSTS="+b.Recipe.DistccHosts, "DISTCC_LOG="+j.distccLog)
	case b.Recipe.Icecc:
		farm = "icecc"
		env = append(env, "ICECC_DEBUG=debug", "ICECC_LOGFILE="+j.iceccLog)
	}
	switch {
	case ccache != "":
		configure = append(configure, "-DCMAKE_C_COMPILER_LAUNCHER="+ccache, "-DCMAKE_CXX_COMPILER_LAUNCHER="+ccache)
		// Paths under the state directory (source and build tree) are hashed
		// relative to it, and the working directory is not hashed (it is in
		// the debug info only), so another state directory's build hits.
		env = append(env, "CCACHE_BASEDIR="+b.StateDir, "CCACHE_NOHASHDIR=true", "CCACHE_STATSLOG="+j.ccacheLog)
		if farm != "" {
			env = append(env, "CCACHE_PREFIX="+farm)
		}
	case farm != "":
		configure = append(configure, "-DCMAKE_C_COMPILER_LAUNCHER="+farm, "-DCMAKE_CXX_COMPILER_LAUNCHER="+farm)
	}
	if j.r.Preset != "" && j.r.Tree.Boost != "" {
		// Before the user's arguments, so that their -DWITH_BOOST wins.
		configure = append(configure, "-DWITH_BOOST="+filepath.Join(j.src, j.r.Tree.Boost))
	}
	return append(configure, j.r.Args...), env
}

// compile runs the build's steps. The build directory builds this revision
// incrementally only when that gives what a clean build gives (reuse.go);
// otherwise it starts empty. A compiler error of an incremental build, or a
// compiler that crashed, is built again once in a fresh build directory
// before it is blamed on the revision; a compiler error of a fresh one is
// remembered. Errors: the failed step's *BuildError, others as Build's.
func (b *Builder) compile(ctx context.Context, j *job) error {
	var spent time.Duration // in the steps, for --build-timeout
	j.env = b.checkFarm(ctx, j.commit, j.env)
	for attempt := 0; ; attempt++ {
		in := j.stepsIn
		in.forceFresh = attempt > 0
		// The launchers append to their logs: each starts empty, and the
		// user's alone like the build log (they name the source's paths).
		for _, l := range []struct {
			path string
			used bool
		}{{in.ccacheLog, true}, {in.distccLog, b.Recipe.DistccHosts != ""}, {in.iceccLog, b.Recipe.Icecc}} {
			_ = os.Remove(l.path)
			if l.used {
				if f, err := os.OpenFile(l.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
					f.Close()
				}
			}
		}
		incremental, be, err := b.steps(ctx, in, &spent)
		if err != nil {
			return err
		}
		if c := readCompiles(in.ccacheLog, in.distccLog, in.iceccLog).String(); c != "" {
			b.logf("build %.10s: %s", j.commit, c)
			fmt.Fprintf(j.logf, "\n# %s\n", c)
		}
		if be == nil {
			return nil
		}
		again := ""
		switch {
		case attempt > 0:
		case be.compilerCrashed:
			b.logf("build %.10s: the compiler crashed (%s); building again once, in a fresh build directory", j.commit, compilerCrash)
			again = "the compiler crashed: building again in a fresh build directory"
		case incremental && !be.TimedOut && !be.Machine:
			b.logf("build %.10s: %s step failed in the reused build directory; building again in a fresh one before blaming the revision", j.commit, be.Step)
			again = fmt.Sprintf("the %s step failed in the reused build directory: building again in a fresh one", be.Step)
		}
		if again != "" {
			fmt.Fprintf(j.logf, "\n# %s\n", again)
			if err := os.RemoveAll(j.tmp); err != nil { // nothing of the failed install may stay
				return err
			}
			continue
		}
		if be.TimedOut {
			reap.Kill(reap.Find(b.StateDir)) // also what left the process group (setsid)
		}
		if !be.TimedOut && !be.Machine && be.Step == "build" && be.fault == faultRevision {
			// A compiler error of a fresh build directory. A configure error
			// is not remembered: it may be the preset's or a package's, and
			// configuring again costs little.
			b.recordFailure(j.prefix, be)
			be.Remembered = j.prefix + ".failed.json"
		}
		_ = os.RemoveAll(j.tmp)
		// Short: the session says what failed when it decides what the
		// failure means (a skip, or an endpoint that cannot be measured).
		b.logf("build %.10s: the %s step failed (log %s)", j.commit, be.Step, be.Log)
		return be
	}
}

// install records the build directory's state, moves the installed tree from
// DESTDIR into the cache, links its code layouts (relink) and marks the entry
// complete.
func (b *Builder) install(ctx context.Context, j *job) error {
	// The build directory's files reach the disk before the record that says
	// its last build finished (a crash must not leave truncated objects that
	// the next build would trust).
	if err := syncfs.Dir(j.bdir); err != nil {
		return err
	}
	if err := writeBuilt(j.bdir, builtState{Commit: j.commit, Recipe: j.recipeLine, Files: j.files, Finished: true}); err != nil {
		return err
	}
	// DESTDIR holds the tree under the fixed prefix (or, for an install command
	// that ignores PREFIX, directly): move it into place.
	installed := filepath.Join(j.tmp, j.fixedPrefix)
	if _, err := os.Stat(installed); err != nil {
		installed = j.tmp
	}
	if !hasFile(installed) {
		_ = os.RemoveAll(j.tmp)
		return &BuildError{Commit: j.commit, Step: "install", Log: j.logPath, Err: fmt.Errorf("nothing was installed into DESTDIR %s (the install must write $DESTDIR$PREFIX)", j.tmp)}
	}
	if err := os.Rename(installed, j.prefix); err != nil {
		return err
	}
	_ = os.RemoveAll(j.tmp)
	st, err := b.store(j.prefix, j.r.Preset != "")
	if err != nil {
		return err
	}
	if err := b.relink(ctx, j); err != nil {
		return err
	}
	// The entry's files reach the disk before the marker that says they are
	// complete (a crash must not leave a marked entry with truncated files).
	if err := syncfs.Dir(j.prefix); err != nil {
		return err
	}
	if err := renameio.WriteFile(filepath.Join(j.prefix, completeMarker), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return err
	}
	b.markUsed(j.prefix)
	b.logf("build %.10s: configured, built and installed in %.1fs: %s", j.commit, time.Since(j.start).Seconds(), st)
	b.evict()
	return nil
}

// step is one command of a build.
type step struct {
	name string
	cmd  []string
	env  []string
}

// stepsIn is what one attempt at building a checked-out revision needs.
type stepsIn struct {
	commit, cmake  string
	jobs           int
	configure, env []string
	src, bdir      string
	recipeLine     string
	files          map[string]string // the checkout's manifest
	logf           *os.File
	logPath        string
	// ccacheLog and distccLog are where the compiler launchers log each
	// compile (CCACHE_STATSLOG, DISTCC_LOG), beside logPath; "" when unused.
	ccacheLog, distccLog, iceccLog string
	start                          time.Time
	forceFresh                     bool // empty the build directory whatever reuseVerdict says
}

// steps configures (when needed), builds and installs the checkout in its
// build directory, first emptied unless an incremental build gives what a
// clean one gives (reuseVerdict). It returns whether the build directory was
// reused, the failure of a step (nil when every step succeeded), or an error
// that is neither (ctx's, I/O). spent accumulates the steps' time for
// --build-timeout.
func (b *Builder) steps(ctx context.Context, in stepsIn, spent *time.Duration) (incremental bool, be *BuildError, err error) {
	commit, bdir, logf := in.commit, in.bdir, in.logf
	prev := readBuilt(bdir)
	why := reuseVerdict(bdir, in.src, prev, in.recipeLine, in.files)
	if in.forceFresh {
		why = "the build failed in the reused build directory"
	}
	if why == "" {
		incremental = true
		fmt.Fprintf(logf, "# incremental build in %s after %s\n", bdir, prev.Commit)
	} else if prev != nil || !emptyDir(bdir) {
		b.logf("build %.10s: fresh build directory: %s", commit, why)
		fmt.Fprintf(logf, "# fresh build directory %s: %s\n", bdir, why)
		if err := freshBuildDir(bdir); err != nil {
			return false, nil, err
		}
	}
	if err := writeBuilt(bdir, builtState{Commit: commit, Recipe: in.recipeLine, Files: in.files}); err != nil {
		return false, nil, err
	}
	env := in.env
	var steps []step
	var want string // the configure marker's content (CMake recipes)
	if b.Recipe.BuildCmd != "" {
		steps = append(steps, step{"build", []string{"sh", "-c", b.Recipe.BuildCmd}, env})
		if b.Recipe.InstallCmd != "" {
			steps = append(steps, step{"install", []string{"sh", "-c", b.Recipe.InstallCmd}, env})
		}
	} else {
		// Configured once per build directory, with these arguments and these
		// CMake inputs (a changed input empties the build directory first:
		// reuse.go).
		want = strings.Join(in.configure, "\n") + "\n" + cmakeInputs(readManifest(in.src))
		configured, _ := os.ReadFile(filepath.Join(bdir, configuredMarker))
		if string(configured) != want {
			_ = os.Remove(filepath.Join(bdir, configuredMarker))
			_ = os.Remove(filepath.Join(bdir, "CMakeCache.txt"))
			steps = append(steps, step{"configure", append([]string{in.cmake}, in.configure...), env})
		}
		steps = append(steps, step{"build", []string{in.cmake, "--build", bdir, "-j", fmt.Sprint(in.jobs)}, env})
		if b.Recipe.InstallCmd != "" {
			steps = append(steps, step{"install", []string{"sh", "-c", b.Recipe.InstallCmd}, env})
		} else {
			steps = append(steps, step{"install", []string{in.cmake, "--install", bdir}, env})
		}
	}
	for _, st := range steps {
		b.logf("build %.10s: %s", commit, st.name)
		b.progress(commit, st.name, -1, in.start)
		fmt.Fprintf(logf, "\n# %s: %s\n", st.name, strings.Join(st.cmd, " "))
		out := &lineWriter{log: logf, raw: b.Raw, last: -1, onPercent: func(p int) { b.progress(commit, st.name, p, in.start) }}
		stepCtx, cancel := ctx, context.CancelFunc(func() {})
		if b.Timeout > 0 {
			stepCtx, cancel = context.WithTimeout(ctx, b.Timeout-*spent)
		}
		began := time.Now()
		faultpoint.Hit(st.name) // configure, build, install
		err := run(stepCtx, out, st.env, bdir, st.cmd[0], st.cmd[1:]...)
		*spent += time.Since(began)
		timedOut := err != nil && errors.Is(stepCtx.Err(), context.DeadlineExceeded) && b.Timeout > 0
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return incremental, nil, ctx.Err()
			}
			logf.Sync()
			d := diagnose(in.logPath, in.src)
			be := &BuildError{Commit: commit, Step: st.name, Log: in.logPath, Lines: d.Lines, Err: err, Packages: d.Packages,
				Installed: installedPackages(d.Packages), Hint: d.Hint, fault: d.Fault, compilerCrashed: d.CompilerCrashed}
			if d.Tool != "" {
				be.Hint = toolHint(d.Tool, d.ToolErr, be.Packages, be.Installed)
			}
			switch {
			case timedOut:
				be.TimedOut = true
				be.Err = fmt.Errorf("killed after --build-timeout %s", b.Timeout)
			case d.Fault == faultMachine:
				be.Machine = true
			}
			return incremental, be, nil
		}
		if st.name == "configure" {
			_ = os.WriteFile(filepath.Join(bdir, configuredMarker), []byte(want), 0o644)
		}
	}
	return incremental, nil, nil
}

func (b *Builder) markUsed(prefix string) {
	if b.used == nil {
		b.used = map[string]bool{}
	}
	b.used[prefix] = true
}

// describe tells the user, once per effective recipe, which preset applies and
// why.
func (b *Builder) describe(r Resolved) {
	if b.shown == nil {
		b.shown = map[string]bool{}
	}
	if b.shown[r.Hash] {
		return
	}
	b.shown[r.Hash] = true
	switch {
	case b.Recipe.BuildCmd != "":
		b.logf("build: %s; --build-cmd %q", r.Tree, b.Recipe.BuildCmd)
	case r.Preset != "":
		b.logf("build: %s; preset %s (%s): %s", r.Tree, r.Preset, strings.Join(r.Notes, "; "), strings.Join(r.Args, " "))
	default:
		args := strings.Join(r.Args, " ")
		if args == "" {
			args = "(none)"
		}
		b.logf("build: %s; no preset; configure arguments: %s", r.Tree, args)
	}
}

func (b *Builder) progress(commit, step string, pct int, start time.Time) {
	if b.Progress != nil {
		b.Progress(Progress{Commit: commit, Step: step, Percent: pct, Elapsed: time.Since(start)})
	}
}

// failure records are kept beside the cache entry (delete the file to retry).
func (b *Builder) recordFailure(prefix string, be *BuildError) {
	rec := struct {
		Step, Log, Err string
		Lines          []string
	}{be.Step, be.Log, be.Err.Error(), be.Lines}
	if data, err := json.Marshal(rec); err == nil {
		_ = os.MkdirAll(filepath.Dir(prefix), 0o755)
		_ = os.WriteFile(prefix+".failed.json", data, 0o644)
	}
}

func (b *Builder) cachedFailure(prefix, commit string) *BuildError {
	data, err := os.ReadFile(prefix + ".failed.json")
	if err != nil {
		return nil
	}
	var rec struct {
		Step, Log, Err string
		Lines          []string
	}
	if json.Unmarshal(data, &rec) != nil {
		return nil
	}
	return &BuildError{Commit: commit, Step: rec.Step, Log: rec.Log, Lines: rec.Lines, Err: errors.New(rec.Err),
		Remembered: prefix + ".failed.json", Earlier: true}
}

func (b *Builder) logf(format string, args ...any) {
	if b.Log != nil {
		fmt.Fprintf(b.Log, format+"\n", args...)
	}
}

// warnf says a problem of the machine's the build works around, on Warn
// when set, else on Log.
func (b *Builder) warnf(format string, args ...any) {
	if b.Warn != nil {
		fmt.Fprintf(b.Warn, format+"\n", args...)
		return
	}
	b.logf(format, args...)
}

// run executes a command in dir in its own process group, output to w, killed
// with the group when ctx ends.
func run(ctx context.Context, w io.Writer, env []string, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.Env = env
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// SIGTERM first, so that make deletes the target it was writing (a linker
	// killed mid-write leaves a truncated binary that the next build would
	// take as up to date); after WaitDelay the leader is killed, and the rest
	// of the group below.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever the command left running
	}
	if errors.Is(err, exec.ErrWaitDelay) && ctx.Err() == nil {
		err = nil // it succeeded; a child it left running held the output open
	}
	return err
}

// sizeString is n bytes for people.
func sizeString(n int64) string { return humanize.IBytes(uint64(max(n, 0))) }
