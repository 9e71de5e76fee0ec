package measure

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMeasurementLockExcludesOtherHolders(t *testing.T) {
	old := LockPath
	LockPath = filepath.Join(t.TempDir(), "measure.lock")
	defer func() { LockPath = old }()
	// Another process's lock, simulated with a second open file description.
	f, err := os.OpenFile(LockPath, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	f.WriteString("pid 4242, state directory /x, since 10:00:00\n")
	var log strings.Builder
	m := New(Config{Log: &log, StateDir: "/my/state"})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := m.lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lock taken while held elsewhere: %v", err)
	}
	if !strings.Contains(log.String(), "pid 4242, state directory /x") {
		t.Errorf("the wait message does not name the holder: %q", log.String())
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
	unlock, err := m.lock(context.Background())
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	if b, _ := os.ReadFile(LockPath); !strings.HasPrefix(string(b), fmt.Sprintf("pid %d, state directory /my/state,", os.Getpid())) {
		t.Errorf("the holder did not write itself into the lock file: %q", b)
	}
	unlock()
}
