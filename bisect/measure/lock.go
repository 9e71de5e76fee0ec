package measure

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// LockPath is the machine-wide measurement lock: a measured window of one
// perfbisect process never overlaps another's (two servers on a small machine
// make each other's numbers meaningless). Builds do not take it.
var LockPath = filepath.Join(os.TempDir(), "perfbisect-measure.lock")

// lock takes the measurement lock (flock(2) on LockPath), waiting while another
// process holds it, until ctx ends. The returned function releases it. The
// kernel releases it too when the process dies.
func (m *Measurer) lock(ctx context.Context) (func(), error) {
	f, err := os.OpenFile(LockPath, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("measurement lock %s: %w", LockPath, err)
	}
	waiting := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("measurement lock %s: %w", LockPath, err)
		}
		if !waiting {
			m.logf("waiting for the measurement lock %s (another perfbisect is measuring)", LockPath)
			waiting = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
