package measure

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// LockPath is the machine-wide measurement lock: a measured window of one
// perfbisect process never overlaps another's (two servers on a small machine
// make each other's numbers meaningless). Builds do not take it.
var LockPath = filepath.Join(os.TempDir(), "perfbisect-measure.lock")

// StateLockFile, in a state directory, is held for a whole session: two sessions
// sharing builds and datadir snapshots would overwrite each other's.
const StateLockFile = "session.lock"

// LockStateDir takes the state directory's lock without waiting. It returns an
// error naming the directory when another perfbisect holds it; the returned
// function releases it (so does the process's death).
func LockStateDir(dir string) (func(), error) {
	p := filepath.Join(dir, StateLockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("state directory lock %s: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("state directory %s is in use by another perfbisect (wait for it, or pass another --state-dir)", dir)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// lock takes the measurement lock (flock(2) on LockPath), waiting while another
// process holds it, until ctx ends. The returned function releases it. The
// kernel releases it too when the process dies.
func (m *Measurer) lock(ctx context.Context) (func(), error) {
	f, err := os.OpenFile(LockPath, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		// Another user's lock file that we may only read still locks.
		if f, err = os.Open(LockPath); err != nil {
			return nil, fmt.Errorf("measurement lock %s: %w", LockPath, err)
		}
	}
	_ = f.Chmod(0o666) // every user of the machine shares it (umask would narrow it)
	var waitingSince, told time.Time
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			// Say who holds it, for those who wait.
			if err := f.Truncate(0); err == nil {
				_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d, state directory %s, since %s\n", os.Getpid(), m.cfg.StateDir, time.Now().Format("15:04:05"))), 0)
			}
			if !waitingSince.IsZero() {
				m.logf("got the measurement lock after %s", time.Since(waitingSince).Round(time.Second))
			}
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("measurement lock %s: %w", LockPath, err)
		}
		if waitingSince.IsZero() {
			waitingSince = time.Now()
		}
		if time.Since(told) >= 30*time.Second {
			holder, _ := os.ReadFile(LockPath)
			m.logf("waiting for the measurement lock %s (%s so far): another perfbisect is measuring: %s", LockPath,
				time.Since(waitingSince).Round(time.Second), strings.TrimSpace(string(holder)))
			told = time.Now()
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
