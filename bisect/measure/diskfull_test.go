package measure

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/diskfault"
	"github.com/perfbisect/perfbisect/internal/testenv"
)

// A disk that fills while a datadir is prepared (the initialisation or the
// load) does not make the server fail: it waits for space ("Disk full ...
// waiting for someone to free some space"), and the preparation waited with
// it (a fault-suite trial saw no exit in 5 minutes). The state directory is
// a real tmpfs, filled as the initialiser runs and as the tables load: the
// preparation must stop with the disk's error (no revision blamed), leave
// no server running, and succeed once the space is back.
func TestDiskFullWhilePreparingStops(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	defer func(g time.Duration) { diskfault.WatchGrace = g }(diskfault.WatchGrace)
	diskfault.WatchGrace = 2 * time.Second
	repo, rev := fixtureGood(t)
	o := bench.DefaultOptions()
	o.Workload, o.TableSize, o.Threads, o.Time, o.Warmup = "oltp_read_only", 100000, 2, time.Second, 0
	for _, phase := range []struct {
		name  string
		seen  func(cmdline string) bool // the process that, once seen, fills the disk
		after time.Duration             // how long after it is seen
	}{
		// At once: a bootstrap can end within 300 ms on a quiet machine
		// (a suite run's preparation then finished before the disk filled).
		{"initialisation", func(c string) bool { return strings.Contains(c, "--bootstrap") }, 0},
		{"load", func(c string) bool { return strings.Contains(c, "/prepare/") && !strings.Contains(c, "--bootstrap") }, 300 * time.Millisecond},
	} {
		t.Run(phase.name, func(t *testing.T) {
			state := testenv.Tmpfs(t, "512m")
			var log strings.Builder
			m := New(Config{Workload: bench.OLTP{Options: o}, Log: &log, StateDir: state, Builder: &build.Builder{Repo: repo, StateDir: state}})
			filler := filepath.Join(state, "filler")
			filled := make(chan bool, 1)
			stopWatch := make(chan struct{})
			go func() {
				for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					select {
					case <-stopWatch:
						filled <- false
						return
					default:
					}
					if pids := serversUnder(state, phase.seen); len(pids) > 0 {
						time.Sleep(phase.after)
						fill(t, filler)
						filled <- true
						return
					}
				}
				filled <- false
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			began := time.Now()
			err := m.Prepare(ctx, rev)
			close(stopWatch)
			if !<-filled {
				t.Fatalf("the %s was not seen (err %v):\n%s", phase.name, err, log.String())
			}
			if ctx.Err() != nil {
				t.Fatalf("the preparation on a full disk did not stop in %v:\n%s", time.Since(began), log.String())
			}
			var de *diskfault.Error
			if !errors.As(err, &de) || de.ReadOnly || bisect.IsUntestable(err) {
				t.Fatalf("full disk during the %s: err %v, want the disk's *diskfault.Error (the revision not blamed)\n%s", phase.name, err, log.String())
			}
			if !strings.Contains(err.Error(), state) {
				t.Errorf("the error does not name the state directory %s: %v", state, err)
			}
			if pids := serversUnder(state, func(string) bool { return true }); len(pids) > 0 {
				t.Errorf("servers left running after the stop: pids %v", pids)
			}
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			if err := m.Prepare(ctx, rev); err != nil {
				t.Fatalf("with the space back, the preparation failed: %v\n%s", err, log.String())
			}
		})
	}
}

// serversUnder returns the pids of the processes whose command line names
// dir and passes seen.
func serversUnder(dir string, seen func(cmdline string) bool) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), dir) || strings.Contains(string(b), "--print-defaults") {
			continue
		}
		c := strings.ReplaceAll(string(b), "\x00", " ")
		if !strings.Contains(c, "mariadbd") && !strings.Contains(c, "mysqld") && !strings.Contains(c, "install-db") {
			continue
		}
		if seen(c) {
			if pid, err := strconv.Atoi(e.Name()); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// fill writes path until its disk is full.
func fill(t *testing.T, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			return
		}
	}
}

// A server that fails on a full disk may free space as it exits (its
// unlinked temporary files go with it), so the disk looks fine when the
// failure is judged: a fault-suite trial blamed a revision so. A failure of
// work during which the watch saw the disk full is the disk's; the same
// failure with the disk never full stays the revision's.
func TestFailureOnADiskSeenFullIsTheDisks(t *testing.T) {
	defer func(e time.Duration) { diskfault.WatchEvery = e }(diskfault.WatchEvery)
	diskfault.WatchEvery = 20 * time.Millisecond
	state := testenv.Tmpfs(t, "64m")
	m := New(Config{StateDir: state})
	filler := filepath.Join(state, "filler")
	crash := &bisect.UntestableError{Commit: "e34fd645fb", Reason: "datadir initialisation failed", Err: errors.New("mariadbd exited with status 1")}
	for _, full := range []bool{false, true} {
		err := m.watchDisk(context.Background(), func(ctx context.Context) error {
			if full {
				fill(t, filler)
			}
			time.Sleep(10 * diskfault.WatchEvery)
			os.Remove(filler) // the server's exit frees its space
			return crash
		})
		var de *diskfault.Error
		switch {
		case full && (!errors.As(err, &de) || bisect.IsUntestable(err)):
			t.Errorf("failed while the disk was full: %v, want the disk's *diskfault.Error and no revision blamed", err)
		case !full && err != error(crash):
			t.Errorf("failed with the disk never full: %v, want the revision's failure as it was", err)
		}
	}
}
