package app

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/internal/diskfault"
	"github.com/perfbisect/perfbisect/internal/reap"
)

// The state directory holds one repository's sessions: the store
// (perfbisect.db), a scratch checkout (src/), build directories, the build
// cache (installs/), datadir snapshots (datadirs/), run directories (runs/)
// and build logs (logs/). One perfbisect works on it at a time
// (measure.LockStateDir).

// DefaultStateDir is the state directory of the repository whose work tree
// is at repoRoot when none is named: a directory of the user's cache
// directory, one per repository path (~/.cache/perfbisect/server-1a2b3c4d).
// Errors: the user has no cache directory (a usage error: name one).
func DefaultStateDir(repoRoot string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", bisect.Usagef("no cache directory (%v): pass --state-dir", err)
	}
	abs, _ := filepath.Abs(repoRoot)
	h := sha256.Sum256([]byte(abs))
	return filepath.Join(base, "perfbisect", filepath.Base(abs)+"-"+hex.EncodeToString(h[:])[:8]), nil
}

// FindStateDir returns the absolute, canonical state directory that the
// commands reading or ending a session mean, without creating anything:
// stateDir when set, else the default one of the repository at repo (the
// current directory's, usually: these commands run in the server's tree).
// Errors (usage): repo is not a repository and no stateDir is named; no
// cache directory.
func FindStateDir(repo, stateDir string) (string, error) {
	root, _ := filepath.Abs(repo)
	if stateDir == "" {
		r, err := bisect.OpenRepo(repo)
		if err != nil {
			// OpenRepo's message already says to pass --repo.
			return "", With(Usage, fmt.Errorf("%w; or name the state directory with --state-dir", err))
		}
		if wt, err := r.Worktree(); err == nil {
			root = wt.Filesystem.Root()
		}
		if stateDir, err = DefaultStateDir(root); err != nil {
			return "", err
		}
	}
	dir, _ := filepath.Abs(stateDir)
	if _, err := os.Stat(dir); err == nil {
		dir = reap.Canonical(dir)
	}
	return dir, nil
}

// MakeStateDir returns the absolute, canonical state directory of a command
// that measures or builds for the repository whose work tree is at repoRoot:
// stateDir, or DefaultStateDir(repoRoot), created (0700) when missing.
// Errors (usage): it overlaps the work tree (perfbisect writes a checkout,
// builds and logs there: inside the tree it would overwrite the user's files,
// around it its src/ could be theirs); it cannot be created (a failure when
// the disk is read-only or full).
func MakeStateDir(stateDir, repoRoot string) (string, error) {
	dir := stateDir
	if dir == "" {
		var err error
		if dir, err = DefaultStateDir(repoRoot); err != nil {
			return "", err
		}
	}
	dir, _ = filepath.Abs(dir)
	canon, root := reap.Canonical(dir), reap.Canonical(repoRoot)
	if repoRoot != "" && (within(canon, root) || within(root, canon)) {
		return "", bisect.Usagef("{state-dir} %s: overlaps the repository's work tree %s; perfbisect writes a checkout, builds and logs there: name a directory outside it", dir, root)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		if de := diskfault.Check(filepath.Dir(dir), err); de != nil {
			return "", With(Failure, fmt.Errorf("--state-dir %s: %w", dir, de))
		}
		return "", bisect.Usagef("{state-dir} %s: %v", dir, err)
	}
	return reap.Canonical(dir), nil // one name per directory, for the lock and the reaping marks
}

// within reports whether path is dir or below it (both absolute and clean).
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// Where is the flag that finds stateDir again from anywhere, for the hints
// perfbisect prints ("perfbisect resume --repo /src/server"): --repo ROOT
// when stateDir is ROOT's default state directory, else --state-dir DIR.
func Where(stateDir, repoRoot string) string {
	if d, err := DefaultStateDir(repoRoot); err == nil && repoRoot != "" {
		if _, err := os.Stat(d); err == nil && reap.Canonical(d) == stateDir {
			return "--repo " + repoRoot
		}
	}
	return "--state-dir " + stateDir
}

// LockAndReap takes the state directory's lock (a usage error naming the
// holder when another perfbisect has it; a failure saying so when the disk
// is read-only or full) and ends the processes an earlier,
// killed perfbisect left working for it (holding the lock, any such process
// is a leftover), saying each on log. The returned function releases the
// lock.
func LockAndReap(dir string, log io.Writer) (unlock func(), err error) {
	unlock, err = measure.LockStateDir(dir)
	if de := diskfault.Check(dir, err); err != nil && de != nil {
		return nil, With(Failure, de) // a read-only or full disk: the machine's
	}
	if err != nil {
		return nil, With(Usage, err)
	}
	for _, p := range reap.Kill(reap.Find(dir)) {
		fmt.Fprintf(log, "perfbisect: killed pid %d left by an earlier perfbisect: %.120s\n", p.Pid, p.Command)
	}
	return unlock, nil
}

// OpenStateStore opens the store of the state directory stateDir, or of
// repo's default one when stateDir is "" (FindStateDir, OpenStore): nil when
// it holds none. It returns the directory either way. Errors as theirs.
func OpenStateStore(repo, stateDir string) (*store.Store, string, error) {
	dir, err := FindStateDir(repo, stateDir)
	if err != nil {
		return nil, "", err
	}
	st, err := OpenStore(dir)
	return st, dir, err
}

// UnfinishedStart returns the store's unfinished bisection (start, replay),
// nil when there is none. Errors: the store cannot be read (a failure).
func UnfinishedStart(st *store.Store) (*store.Session, error) {
	cur, err := st.Current(store.KindStart)
	if err != nil {
		return nil, With(Failure, err)
	}
	return cur, nil
}

// OpenStore opens the store of the state directory dir without locking it
// (reading is safe beside a running session). It returns a nil store, and
// creates nothing, when dir holds no store. Errors: the store cannot be
// opened (damaged, newer schema: a Failure naming the file).
func OpenStore(dir string) (*store.Store, error) {
	if _, err := os.Stat(filepath.Join(dir, store.FileName)); err != nil {
		return nil, nil
	}
	st, err := store.Open(dir)
	if err != nil && diskfault.Check(dir, err) != nil {
		// A read-only (or full) disk: what the session stored can still
		// be shown.
		if ro, rerr := store.OpenReadOnly(dir); rerr == nil {
			return ro, nil
		}
	}
	if err != nil {
		return nil, With(Failure, err)
	}
	return st, nil
}
