package measure

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
	m := New(Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := m.lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lock taken while held elsewhere: %v", err)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
	unlock, err := m.lock(context.Background())
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	unlock()
}
