package serverctl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/internal/faultpoint"
	"github.com/perfbisect/perfbisect/internal/reap"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

// openFDs counts the file descriptors of this process.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestTwentyCyclesLeaveNothingBehind prepares one snapshot and runs 20
// restore/start/run/stop cycles with the real workload client, as a bisect
// does: no server process, socket directory, run directory, file descriptor or
// goroutine may outlive them. A kill -9 of mysqld in the middle of a run is
// reported with how it ended and its error log, and the next cycle works.
func TestTwentyCyclesLeaveNothingBehind(t *testing.T) {
	testenv.Require(t, testenv.Server)
	in := systemInstall(t)
	ctx := context.Background()
	dir := t.TempDir()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // socket directories go here: it must end empty
	snap := filepath.Join(dir, "snap")
	cnf := filepath.Join(dir, "my.cnf")
	os.WriteFile(cnf, []byte("[mysqld]\ninnodb_buffer_pool_size=32M\n"), 0o644)
	o := Options{Install: in, OptionFile: cnf, RunDir: filepath.Join(dir, "prepare"), Datadir: snap, Owner: dir}
	if err := Initialize(ctx, o); err != nil {
		t.Fatal(err)
	}
	s, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	bo := bench.DefaultOptions()
	bo.TableSize, bo.Threads, bo.Time = 1000, 2, 300*time.Millisecond
	if err := bench.Prepare(ctx, s.DSN("sbtest"), bo); err != nil {
		s.Kill()
		t.Fatal(err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	fds, goroutines := openFDs(t), runtime.NumGoroutine()
	const cycles = 20
	killAt := cycles / 2
	for i := 0; i < cycles; i++ {
		run := filepath.Join(dir, "runs", fmt.Sprint(i))
		data := filepath.Join(run, "data")
		if err := CopyDatadir(snap, data); err != nil {
			t.Fatal(err)
		}
		ro := Options{Install: in, OptionFile: cnf, RunDir: run, Datadir: data, Owner: dir}
		s, err := Start(ctx, ro)
		if err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		var h bench.Hooks
		if i == killAt {
			h.MeasureStart = func() { syscall.Kill(s.Pid(), syscall.SIGKILL) }
		}
		res, berr := bench.Run(ctx, s.DSN("sbtest"), bo, h)
		if i == killAt {
			if berr == nil {
				t.Fatalf("cycle %d: the run survived a kill -9 of mysqld: %+v", i, res)
			}
			deadline := time.Now().Add(10 * time.Second)
			for s.Alive() && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			var se *ServerError
			if died := s.Died(); !errors.As(died, &se) || !strings.Contains(died.Error(), "killed by signal") || len(se.Lines) == 0 {
				t.Errorf("cycle %d: the crash is not reported with its signal and log lines: %v", i, died)
			}
			if err := s.Stop(ctx); err == nil {
				t.Errorf("cycle %d: Stop of a crashed server reports no error", i)
			}
			s.Kill()
		} else {
			if berr != nil || res.Events == 0 {
				t.Fatalf("cycle %d: run: %v (%v events)", i, berr, res)
			}
			if err := s.Stop(ctx); err != nil {
				t.Fatalf("cycle %d: stop: %v", i, err)
			}
		}
		if s.Alive() || syscall.Kill(s.Pid(), 0) == nil {
			t.Fatalf("cycle %d: mysqld %d still running", i, s.Pid())
		}
		if err := RemoveDatadir(data); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(run); err != nil {
			t.Fatal(err)
		}
	}
	if ps := reap.Find(dir); len(ps) > 0 {
		reap.Kill(ps)
		t.Errorf("processes left: %v", ps)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
		t.Errorf("left in TMPDIR: %v", ents)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "runs")); len(ents) > 0 {
		t.Errorf("run directories left: %v", ents)
	}
	// Goroutines and descriptors of the client and the server watchers end
	// with their cycle (a little slack for the runtime's own).
	time.Sleep(100 * time.Millisecond)
	if n := openFDs(t); n > fds+2 {
		t.Errorf("%d file descriptors open after %d cycles, %d before", n, cycles, fds)
	}
	if n := runtime.NumGoroutine(); n > goroutines+2 {
		t.Errorf("%d goroutines after %d cycles, %d before", n, cycles, goroutines)
	}
}

// TestStartRetriesATakenPort makes the first port choice collide with a port
// another process listens on: the server fails to bind, and Start restarts it
// on another port. A TMPDIR too long for a unix socket path is worked around.
func TestStartRetriesATakenPort(t *testing.T) {
	testenv.Require(t, testenv.Server)
	in := systemInstall(t)
	ctx := context.Background()
	dir := t.TempDir()
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	os.MkdirAll(long, 0o700)
	t.Setenv("TMPDIR", long)
	o := Options{Install: in, RunDir: filepath.Join(dir, "run")}
	if err := Initialize(ctx, o); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	calls := 0
	pickPort = func() (int, error) {
		calls++
		if calls == 1 {
			return taken, nil
		}
		return freePort()
	}
	defer func() { pickPort = freePort }()
	s, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Kill()
	if calls < 2 || s.Port() == taken {
		t.Errorf("server on port %d after %d choices; %d was taken", s.Port(), calls, taken)
	}
	if len(s.Socket()) > maxSocketPath || strings.HasPrefix(s.Socket(), long) {
		t.Errorf("socket %s (%d bytes) under the long TMPDIR", s.Socket(), len(s.Socket()))
	}
	if err := s.Stop(ctx); err != nil {
		t.Error(err)
	}
}

// TestStartOfAServerThatNeverGetsReady: a real server stopped (SIGSTOP) as
// soon as it runs holds its files and answers nothing: the start fails
// after StartTimeout with NotReady set and the server's log, and the
// stopped process is killed, its socket directory removed.
func TestStartOfAServerThatNeverGetsReady(t *testing.T) {
	testenv.Require(t, testenv.Server)
	in := systemInstall(t)
	ctx := context.Background()
	o := Options{Install: in, RunDir: filepath.Join(t.TempDir(), "run"), StartTimeout: 2 * time.Second}
	if err := Initialize(ctx, o); err != nil {
		t.Fatal(err)
	}
	pid := 0
	afterSpawn = func(p int) {
		pid = p
		_ = syscall.Kill(p, syscall.SIGSTOP)
	}
	defer func() { afterSpawn = faultpoint.Hang }()
	began := time.Now()
	s, err := Start(ctx, o)
	if err == nil {
		s.Kill()
		t.Fatal("a stopped server was taken as started")
	}
	var se *ServerError
	if !errors.As(err, &se) || !se.NotReady || !strings.Contains(err.Error(), "not accepting connections after 2s") {
		t.Fatalf("start of a stopped server: %v (NotReady %v)", err, se != nil && se.NotReady)
	}
	if took := time.Since(began); took < 2*time.Second || took > time.Minute {
		t.Errorf("the start failed after %s, want the 2s timeout", took)
	}
	if pid == 0 {
		t.Fatal("afterSpawn was not called")
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the stopped server (pid %d) is still there", pid)
	}
}

// An initialisation stopped while the script's own server (mariadbd
// --bootstrap) runs leaves no process on the datadir once Initialize
// returns: the script is the group's leader, and its server, killed with
// it, may still be exiting when the script is reaped. The stop comes at
// several moments of the bootstrap, the server holding a 1 GB buffer pool
// (a slower exit).
func TestInterruptedInitializeLeavesNoServer(t *testing.T) {
	testenv.Require(t, testenv.Server)
	in := systemInstall(t)
	if in.InitializesItself() {
		t.Skip("the server initialises itself: no script with a server under it")
	}
	dir := t.TempDir()
	cnf := filepath.Join(dir, "my.cnf")
	if err := os.WriteFile(cnf, []byte("[mysqld]\ninnodb_buffer_pool_size=1G\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// on lists the live processes working for the run directory (the
	// owner mark every process of the initialisation inherits; a zombie's
	// is gone).
	on := func(run string) []string {
		var out []string
		for _, p := range reap.Find(run) {
			out = append(out, fmt.Sprint(p.Pid, " ", p.Command))
		}
		return out
	}
	stopped := 0
	for i, after := range []time.Duration{0, 20 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond} {
		run := filepath.Join(dir, fmt.Sprint(i))
		o := Options{Install: in, OptionFile: cnf, RunDir: run}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(5 * time.Millisecond) {
				for _, p := range on(run) {
					if strings.Contains(p, "--bootstrap") {
						time.Sleep(after)
						cancel()
						return
					}
				}
			}
		}()
		began := time.Now()
		err := Initialize(ctx, o)
		left := on(run)
		cancel()
		t.Logf("stop %v into the bootstrap: %v after %v", after, err, time.Since(began).Round(time.Millisecond))
		if err == nil {
			continue // the bootstrap ended first: nothing stopped
		}
		stopped++
		if !errors.Is(err, context.Canceled) {
			t.Errorf("stopped %v into the bootstrap: %v, want the interruption", after, err)
		}
		if len(left) > 0 {
			t.Errorf("stopped %v into the bootstrap: left running on the datadir: %q", after, left)
		}
	}
	if stopped == 0 {
		t.Fatalf("no initialisation was stopped during its bootstrap")
	}
}
