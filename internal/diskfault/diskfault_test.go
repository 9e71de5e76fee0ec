package diskfault

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

func TestCheckReadsTheError(t *testing.T) {
	dir := t.TempDir() // a disk with room: only the error can say full
	for _, c := range []struct {
		err      error
		full, ro bool
	}{
		{errors.New("InnoDB: preallocating 12582912 bytes for file ibdata1 failed with error 28"), true, false},
		{errors.New("Could not set the file size of 'ibdata1'. Probably out of disk space"), true, false},
		{fmt.Errorf("copy: %w", &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}), true, false},
		{errors.New("store: database or disk is full (13)"), true, false},
		{errors.New("mariadbd: Disk full (/x/aria_log.00000001); waiting for someone to free some space..."), true, false},
		{fmt.Errorf("mkdir: %w", &os.PathError{Op: "mkdir", Path: "x", Err: syscall.EROFS}), false, true},
		{errors.New("Can't create/write to file '/x/ddl_recovery.log' (Errcode: 30 \"Read-only file system\")"), false, true},
		{errors.New("server crashed: signal 11"), false, false},
		{errors.New("listen tcp 127.0.0.1:3306: bind: address already in use (error 98)"), false, false},
		{errors.New("run 281: 28 tps"), false, false},
	} {
		got := Check(dir, c.err)
		if (got != nil) != (c.full || c.ro) || got != nil && got.ReadOnly != c.ro {
			t.Errorf("Check(%q) = %v, want full %v read-only %v", c.err, got, c.full, c.ro)
			continue
		}
		if got != nil {
			if !errors.Is(got, c.err) || !strings.Contains(got.Error(), dir) {
				t.Errorf("Check(%q) = %q: must wrap the error and name %s", c.err, got, dir)
			}
			if errors.As(fmt.Errorf("wrapped: %w", got), new(*Error)) && Check(dir, fmt.Errorf("wrapped: %w", got)) != got {
				t.Errorf("an *Error already in the chain must come back as it is")
			}
		}
	}
	if Check(dir, nil) != nil {
		t.Errorf("Check of a disk with room and no error: want nil")
	}
}

// TestCheckReadsTheDisk mounts a small tmpfs (root only: the test says so
// and is skipped elsewhere), fills it, and checks that a failure with no sign
// of its own is the disk's once the disk is full, and that a read-only mount
// is seen.
func TestCheckReadsTheDisk(t *testing.T) {
	dir := testenv.Tmpfs(t, "4m")
	crash := errors.New("server exited with status 1")
	if got := Check(dir, crash); got == nil || got.ReadOnly {
		// 4 MiB is under MinFree: full from the start.
		t.Fatalf("a 4 MiB filesystem is under MinFree: Check = %v, want full", got)
	}
	testenv.ReadOnly(t, dir, "4m")
	if got := Check(dir, crash); got == nil || !got.ReadOnly {
		t.Fatalf("read-only mount: Check = %v, want read-only", got)
	}
	big := testenv.Tmpfs(t, "64m")
	if got := Check(big, crash); got != nil {
		t.Fatalf("64 MiB free, no sign in the error: Check = %v, want nil", got)
	}
	f, _ := os.Create(big + "/filler")
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	f.Close()
	if got := Check(big, crash); got == nil || got.ReadOnly || got.Free >= MinFree {
		t.Fatalf("filled: Check = %v, want full", got)
	}
}

// TestWatchEndsWorkOnAFullDisk watches a real tmpfs (root only): while it
// has room the watched context lives; filled and kept full, the context ends
// with an *Error as its cause, after the grace and not before; stop ends a
// watch of a disk with room without a cause.
func TestWatchEndsWorkOnAFullDisk(t *testing.T) {
	defer func(e, g time.Duration) { WatchEvery, WatchGrace = e, g }(WatchEvery, WatchGrace)
	WatchEvery, WatchGrace = 20*time.Millisecond, 300*time.Millisecond
	dir := testenv.Tmpfs(t, "64m")

	w := Watch(context.Background(), dir)
	time.Sleep(5 * WatchGrace)
	if w.Context().Err() != nil || w.Seen() != nil {
		t.Fatalf("a disk with room ended the watch (%v) or was seen full (%v)", context.Cause(w.Context()), w.Seen())
	}
	w.Stop()
	if w.Context().Err() == nil || Cause(w.Context()) != nil {
		t.Fatalf("after stop: err %v, cause %v; want cancelled, no disk cause", w.Context().Err(), Cause(w.Context()))
	}

	// Full for less than the grace: the work goes on, but the watch saw it.
	w = Watch(context.Background(), dir)
	defer w.Stop()
	filler := dir + "/filler"
	fill := func() {
		f, err := os.Create(filler)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1<<20)
		for {
			if _, err := f.Write(buf); err != nil {
				break
			}
		}
		f.Close()
	}
	fill()
	time.Sleep(WatchGrace / 2)
	os.Remove(filler)
	time.Sleep(WatchGrace)
	if w.Context().Err() != nil {
		t.Fatalf("full for half the grace ended the watch: %v", context.Cause(w.Context()))
	}
	if de := w.Seen(); de == nil || de.ReadOnly || de.Dir != dir {
		t.Fatalf("full for half the grace: Seen = %v, want the full disk", de)
	}
	w.Stop()

	w = Watch(context.Background(), dir)
	defer w.Stop()
	fill()
	full := time.Now()
	select {
	case <-w.Context().Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the disk has been full for 30 s and the watch goes on")
	}
	if waited := time.Since(full); waited < WatchGrace-WatchEvery {
		t.Errorf("ended %v after the disk filled, before the %v grace", waited, WatchGrace)
	}
	de := Cause(w.Context())
	if de == nil || de.ReadOnly || de.Dir != dir || !strings.Contains(de.Error(), "is full") {
		t.Fatalf("cause %v, want a full-disk *Error naming %s", context.Cause(w.Context()), dir)
	}
}
