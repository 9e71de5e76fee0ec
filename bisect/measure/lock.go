package measure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// LockPath is the machine-wide measurement lock: a measured window of one
// perfbisect process never overlaps another's window or build step (two
// servers, or a server and a compiler, on a small machine make each other's
// numbers meaningless). See MachineLock. It is in the machine's lock
// directory, never under $TMPDIR: two perfbisects with different TMPDIRs
// must still find the same lock (lockDir).
var LockPath = filepath.Join(lockDir(), "perfbisect-measure.lock")

// lockDir is /run/lock (the FHS directory for lock files, 1777 on Debian)
// when every user may write there, else /tmp: root and the other users of
// a machine must pick the same one.
func lockDir() string {
	if st, err := os.Stat("/run/lock"); err == nil && st.IsDir() && st.Mode().Perm()&0o002 != 0 {
		return "/run/lock"
	}
	return "/tmp"
}

// StateLockFile, in a state directory, is held for a whole session: two sessions
// sharing builds and datadir snapshots would overwrite each other's.
const StateLockFile = "session.lock"

// ErrStateDirInUse is LockStateDir's error when another perfbisect holds the
// state directory (errors.Is), as opposed to a lock file that cannot be
// opened (a read-only disk).
var ErrStateDirInUse = errors.New("in use by another perfbisect")

// LockStateDir takes the state directory's lock without waiting. It returns an
// error naming the directory and the holder (its pid and since when),
// wrapping ErrStateDirInUse, when another perfbisect holds it; the returned
// function releases it (so does the process's death). An empty dir is an
// error (it would lock the working directory).
func LockStateDir(dir string) (func(), error) {
	if dir == "" {
		return nil, errors.New("state directory lock: no state directory given")
	}
	p := filepath.Join(dir, StateLockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state directory lock %s: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(p)
		f.Close()
		who := strings.TrimSpace(string(holder))
		if who == "" {
			who = "an older perfbisect"
		}
		return nil, fmt.Errorf("state directory %s is %w (%s): wait for it to end, or use another state directory", dir, ErrStateDirInUse, who)
	}
	_ = f.Chmod(0o600) // a lock file of an older perfbisect was 0644
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d, since %s", os.Getpid(), time.Now().Format(time.DateTime))), 0)
	}
	return func() {
		_ = f.Truncate(0)
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// lock takes the machine lock for a measured window or a datadir's
// preparation (see MachineLock).
func (m *Measurer) lock(ctx context.Context) (func(), error) {
	return MachineLock(ctx, "measuring", m.cfg.StateDir, m.cfg.Log)
}

// MachineLock takes the machine-wide lock (flock(2) on LockPath) for activity
// ("measuring", "building 3f2c1a9: build"), waiting while another process
// holds it, until ctx ends; while waiting it says every 30 s on log (may be
// nil) who holds it. The returned function releases it; the kernel releases it
// too when the process dies. Measured windows and build steps of every
// perfbisect on the machine take it, so that no window overlaps another
// perfbisect's window or compiler. Errors: the lock file cannot be opened;
// ctx's error.
func MachineLock(ctx context.Context, activity, stateDir string, log io.Writer) (func(), error) {
	logf := func(format string, args ...any) {
		if log != nil {
			fmt.Fprintf(log, format+"\n", args...)
		}
	}
	f, err := os.OpenFile(LockPath, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		// Another user's lock file that we may only read still locks.
		if f, err = os.Open(LockPath); err != nil {
			return nil, fmt.Errorf("measurement lock %s: %w", LockPath, err)
		}
	}
	_ = f.Chmod(0o666) // every user of the machine shares it (umask would narrow it)
	fd := int(f.Fd())
	took := func(waited time.Duration) (func(), error) {
		// Say who holds it, for those who wait.
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d, state directory %s, %s since %s\n", os.Getpid(), stateDir, activity, time.Now().Format("15:04:05"))), 0)
		}
		if waited > 0 {
			logf("got the measurement lock after %s", waited.Round(time.Second))
		}
		return func() {
			_ = f.Truncate(0) // a waiter must not read a holder that let go
			_ = syscall.Flock(fd, syscall.LOCK_UN)
			f.Close()
		}, nil
	}
	err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		return took(0)
	}
	if err != syscall.EWOULDBLOCK {
		f.Close()
		return nil, fmt.Errorf("measurement lock %s: %w", LockPath, err)
	}
	// Wait in the kernel (a blocking flock is woken when the holder lets go;
	// polling would lose every time to a holder that takes it again at once).
	since := time.Now()
	say := func() {
		b, _ := os.ReadFile(LockPath)
		holder := strings.TrimSpace(string(b))
		if holder == "" || strings.HasPrefix(holder, fmt.Sprintf("pid %d,", os.Getpid())) {
			holder = "it has not said who yet" // just taken, or a line of our own earlier hold
		}
		logf("waiting for the measurement lock %s (%s so far) before %s: another perfbisect holds it: %s", LockPath,
			time.Since(since).Round(time.Second), activity, holder)
	}
	say()
	got := make(chan error, 1)
	var mu sync.Mutex // abandoned, and the hand-over through got
	abandoned := false
	go func() {
		var err error
		for {
			if err = syscall.Flock(fd, syscall.LOCK_EX); err != syscall.EINTR {
				break
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if abandoned { // the caller gave up: let go at once
			if err == nil {
				_ = syscall.Flock(fd, syscall.LOCK_UN)
			}
			f.Close()
			return
		}
		got <- err
	}()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-got:
			if err != nil {
				f.Close()
				return nil, fmt.Errorf("measurement lock %s: %w", LockPath, err)
			}
			return took(time.Since(since))
		case <-tick.C:
			say()
		case <-ctx.Done():
			mu.Lock()
			abandoned = true
			// The waiting goroutine may have got it just now.
			select {
			case err := <-got:
				if err == nil {
					_ = syscall.Flock(fd, syscall.LOCK_UN)
				}
				f.Close()
			default:
			}
			mu.Unlock()
			return nil, ctx.Err()
		}
	}
}
