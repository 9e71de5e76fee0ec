// Package build turns a commit of a server's source repository into an installed
// server tree: it checks the source out into a scratch directory owned by
// perfbisect (never the user's work tree), configures it out of tree with CMake,
// builds with `cmake --build -j <cores>` (ccache as compiler launcher when
// installed), installs into a per-commit cache entry and keeps the build log. It
// knows nothing about benchmarks.
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
	"strings"
	"syscall"
	"time"

	git "github.com/go-git/go-git/v5"

	"github.com/perfbisect/perfbisect/internal/excerpt"
	"github.com/perfbisect/perfbisect/internal/reap"
)

// ErrNoCMake is returned (wrapped) when cmake is not installed: a machine
// problem, not the revision's.
var ErrNoCMake = errors.New("cmake not found in PATH (install it: apt-get install cmake)")

// Recipe says how a revision is built. Two builds with the same recipe hash share
// a build directory and cache entries.
type Recipe struct {
	CMakeArgs []string // extra configure arguments, e.g. -DPLUGIN_TOKUDB=NO
	Jobs      int      // parallel build jobs; 0 = number of CPUs
	NoCcache  bool     // do not use ccache even when installed
}

// Hash identifies the recipe in cache paths: 12 hex digits of SHA-256 over the
// configure arguments.
func (r Recipe) Hash() string {
	h := sha256.Sum256([]byte(strings.Join(r.CMakeArgs, "\x00") + fmt.Sprintf("\x00ccache=%v", !r.NoCcache)))
	return hex.EncodeToString(h[:])[:12]
}

// Builder builds revisions of one repository with one recipe under StateDir:
//
//	StateDir/src/                     scratch checkout, reused across revisions
//	StateDir/build-<recipe>/          out-of-tree CMake build directory, reused
//	StateDir/installs/<recipe>/<sha>/ installed tree of one revision (the cache)
//	StateDir/logs/<sha>-build.log     configure, build and install output
type Builder struct {
	Repo     *git.Repository
	StateDir string
	Recipe   Recipe
	Log      io.Writer // progress lines ("build 3f2c1a9: configure"); may be nil
}

// BuildError is a revision that does not configure, build or install: the
// revision's fault (the bisect skips it).
type BuildError struct {
	Commit string
	Step   string // configure, build, install
	Log    string // path of the full build log
	Lines  []string
	Err    error
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("%s step of %.10s: %v (log %s): %s", e.Step, e.Commit, e.Err, e.Log, strings.Join(e.Lines, " | "))
}

func (e *BuildError) Unwrap() error { return e.Err }

// InstallDir returns where the installed tree of commit is (or will be) cached.
func (b *Builder) InstallDir(commit string) string {
	return filepath.Join(b.StateDir, "installs", b.Recipe.Hash(), commit)
}

// completeMarker is written last into a cache entry: an entry without it is a
// build that was interrupted and is redone.
const completeMarker = ".perfbisect-complete"

// Build returns the install prefix of commit, building it first unless the cache
// already holds it. Errors: ErrNoCMake (wrapped) when cmake is missing; a
// *BuildError when the revision fails to configure, build or install; others for
// I/O and git problems; ctx cancellation kills the build's process group.
func (b *Builder) Build(ctx context.Context, commit string) (string, error) {
	prefix := b.InstallDir(commit)
	if _, err := os.Stat(filepath.Join(prefix, completeMarker)); err == nil {
		b.logf("build %.10s: cached in %s", commit, prefix)
		return prefix, nil
	}
	if be := b.cachedFailure(commit); be != nil {
		b.logf("build %.10s: failed in an earlier session (delete %s to retry)", commit, b.failedPath(commit))
		return "", be
	}
	cmake, err := exec.LookPath("cmake")
	if err != nil {
		return "", ErrNoCMake
	}
	src := filepath.Join(b.StateDir, "src")
	bdir := filepath.Join(b.StateDir, "build-"+b.Recipe.Hash())
	logDir := filepath.Join(b.StateDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return "", err
	}
	logPath := filepath.Join(logDir, commit[:min(12, len(commit))]+"-build.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	defer logf.Close()

	start := time.Now()
	b.logf("build %.10s: checkout", commit)
	n, err := Checkout(b.Repo, commit, src)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(logf, "# checkout %s: %d files written to %s\n", commit, n, src)

	configure := []string{"-S", src, "-B", bdir, "-DCMAKE_INSTALL_PREFIX=" + filepath.Join(b.StateDir, "prefix-"+b.Recipe.Hash())}
	env := reap.Mark(os.Environ(), b.StateDir) // a later session can find our leftovers
	if cc, err := exec.LookPath("ccache"); err == nil && !b.Recipe.NoCcache {
		configure = append(configure, "-DCMAKE_C_COMPILER_LAUNCHER="+cc, "-DCMAKE_CXX_COMPILER_LAUNCHER="+cc)
		env = append(env, "CCACHE_BASEDIR="+src)
	}
	configure = append(configure, b.Recipe.CMakeArgs...)
	jobs := b.Recipe.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	_ = os.RemoveAll(prefix)
	steps := []struct {
		name string
		args []string
	}{
		{"configure", configure},
		{"build", []string{"--build", bdir, "-j", fmt.Sprint(jobs)}},
		{"install", []string{"--install", bdir, "--prefix", prefix}},
	}
	for _, st := range steps {
		b.logf("build %.10s: %s", commit, st.name)
		fmt.Fprintf(logf, "\n# %s: cmake %s\n", st.name, strings.Join(st.args, " "))
		if err := run(ctx, logf, env, cmake, st.args...); err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			logf.Sync()
			be := &BuildError{Commit: commit, Step: st.name, Log: logPath, Lines: failureLines(logPath), Err: err}
			if st.name != "install" && revisionsFault(be.Lines) {
				b.recordFailure(be) // a compiler or CMake error, not a killed compiler or a full disk
			}
			return "", be
		}
	}
	if err := os.WriteFile(filepath.Join(prefix, completeMarker), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return "", err
	}
	b.logf("build %.10s: installed in %.1fs", commit, time.Since(start).Seconds())
	return prefix, nil
}

// revisionsFault reports whether a build log's failure lines are the source's
// fault (a compiler or CMake error), as opposed to the machine's (a compiler
// killed by the OOM killer, a full disk), which must not be remembered.
func revisionsFault(lines []string) bool {
	for _, l := range lines {
		if strings.Contains(l, "No space left") || strings.Contains(l, "Killed") || strings.Contains(l, "signal") {
			return false
		}
	}
	for _, l := range lines {
		if strings.Contains(l, "error:") || strings.Contains(l, "CMake Error") {
			return true
		}
	}
	return false
}

// failedPath is where a revision's build failure is remembered, so that the
// next session does not build it again (delete the file to retry).
func (b *Builder) failedPath(commit string) string {
	return b.InstallDir(commit) + ".failed.json"
}

func (b *Builder) recordFailure(be *BuildError) {
	rec := struct {
		Step, Log, Err string
		Lines          []string
	}{be.Step, be.Log, be.Err.Error(), be.Lines}
	if data, err := json.Marshal(rec); err == nil {
		_ = os.MkdirAll(filepath.Dir(b.failedPath(be.Commit)), 0o755)
		_ = os.WriteFile(b.failedPath(be.Commit), data, 0o644)
	}
}

func (b *Builder) cachedFailure(commit string) *BuildError {
	data, err := os.ReadFile(b.failedPath(commit))
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
	return &BuildError{Commit: commit, Step: rec.Step, Log: rec.Log, Lines: rec.Lines,
		Err: fmt.Errorf("%s (remembered from an earlier session; delete %s to retry)", rec.Err, b.failedPath(commit))}
}

func (b *Builder) logf(format string, args ...any) {
	if b.Log != nil {
		fmt.Fprintf(b.Log, format+"\n", args...)
	}
}

// run executes a command in its own process group, output to w, killed with the
// group when ctx ends.
func run(ctx context.Context, w io.Writer, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd.Run()
}

// failureLines picks the lines of a build log that say why it failed: compiler
// and CMake errors (at most 5), else the last 5 lines.
func failureLines(path string) []string {
	b, _ := os.ReadFile(path)
	return excerpt.Lines(string(b), excerpt.Contains("error:", "CMake Error", "Error "), 5, 5)
}
