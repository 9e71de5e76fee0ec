package measure

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/build"

	"github.com/perfbisect/perfbisect/internal/testenv"
	"github.com/perfbisect/perfbisect/serverctl"
)

func TestDisturbanceThreshold(t *testing.T) {
	capacity := 3 * time.Second // a 1.5 s window on 2 CPUs
	for _, c := range []struct {
		steal, other time.Duration
		want         bool
	}{
		{0, 0, false},
		{120 * time.Millisecond, 0, false}, // 4%: the undisturbed runs of a noisy VM
		{230 * time.Millisecond, 0, true},  // the mildest steal that measured a good revision slow
		{150 * time.Millisecond, 100 * time.Millisecond, true},
		{190 * time.Millisecond, 0, false}, // within the kernel's tick accounting of 5%
		{0, time.Second, true},             // a compile beside the server
	} {
		d := disturbance{steal: c.steal, other: c.other, capacity: capacity}
		if d.disturbed() != c.want {
			t.Errorf("%s: disturbed %v, want %v", d, d.disturbed(), c.want)
		}
	}
	if (disturbance{steal: time.Second}).disturbed() {
		t.Errorf("a run without a known capacity counts as disturbed")
	}
}

// hogLog kills the CPU hog when the measurer says a run was disturbed.
type hogLog struct {
	mu   sync.Mutex
	text strings.Builder
	hog  *exec.Cmd
}

func (l *hogLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.text.Write(p)
	if strings.Contains(string(p), "measured again, not counted") && l.hog.ProcessState == nil {
		_ = l.hog.Process.Kill()
		_ = l.hog.Wait()
	}
	return len(p), nil
}

// A real server on the fixture, measured while another process burns a CPU:
// that run is measured again and not counted, and the run returned says what
// was discarded.
func TestDisturbedRunIsMeasuredAgain(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	o := bench.DefaultOptions()
	o.Workload, o.TableSize, o.Threads, o.Time, o.RangeSize = "oltp_read_only", 10000, 2, time.Second, 100
	hog := exec.Command("sh", "-c", "while :; do :; done")
	log := &hogLog{hog: hog}
	m, rev, _ := fixtureMeasurer(t, Config{Workload: bench.OLTP{Options: o}, Log: log})
	if err := hog.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if hog.ProcessState == nil {
			_ = hog.Process.Kill()
			_ = hog.Wait()
		}
	}()
	runs, err := m.Measure(context.Background(), rev, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := runs[0]
	t.Logf("run: %.1f tps, facts %v\nlog:\n%s", r.TPS, r.Facts, log.text.String())
	if hog.ProcessState == nil {
		t.Fatalf("no run was found disturbed while a process burned one of %d CPUs", runtime.NumCPU())
	}
	first, _, _ := strings.Cut(r.Facts["discarded_runs"], ";")
	m1 := regexp.MustCompile(`tps \(steal [0-9.]+s, other processes ([0-9.]+)s`).FindStringSubmatch(first)
	if m1 == nil {
		t.Fatalf("the run does not name the discarded one: discarded_runs %q", r.Facts["discarded_runs"])
	}
	// The hog had one CPU for the whole window (1 s).
	if other, _ := strconv.ParseFloat(m1[1], 64); other < 0.3 {
		t.Errorf("the discarded run's other processes used %.2fs, want most of the 1 s window", other)
	}
	// The run that counts is undisturbed, or (the machine busy with something
	// else after the hog was gone) says it was disturbed after every retry.
	other, _ := strconv.ParseFloat(r.Facts["other_cpu_s"], 64)
	steal, _ := strconv.ParseFloat(r.Facts["steal_s"], 64)
	capacity := o.Time.Seconds() * float64(serverctl.MachineCPUs())
	if r.Facts["disturbed"] == "" && other+steal > DisturbedShare*capacity+tickSlack.Seconds()+0.01 {
		t.Errorf("a disturbed run counts without saying so: other_cpu_s %s, steal_s %s", r.Facts["other_cpu_s"], r.Facts["steal_s"])
	}
	// The built-in client's own CPU per transaction is stored: the control
	// that tells a slower machine from a slower server.
	if c, err := strconv.ParseFloat(r.Facts["client_cpu_us_txn"], 64); err != nil || c < 1 || c > 1e5 {
		t.Errorf("client_cpu_us_txn %q: want the client's CPU microseconds per transaction", r.Facts["client_cpu_us_txn"])
	}
	if r.Facts["disturbed"] != "" && strings.Count(r.Facts["discarded_runs"], "tps (") != 3 {
		t.Errorf("a disturbed run counts before the retries ran out: %v", r.Facts)
	}
}

// fixtureMeasurer makes a 4-commit fixture and a Measurer of cfg on it (its
// Builder and StateDir filled in; a machine lock of the test's own), and
// prepares the good revision: it returns the Measurer, that revision and the
// state directory.
func fixtureMeasurer(t *testing.T, cfg Config) (*Measurer, string, string) {
	t.Helper()
	repo, rev := fixtureGood(t)
	cfg.StateDir = t.TempDir()
	cfg.Builder = &build.Builder{Repo: repo, StateDir: cfg.StateDir}
	m := New(cfg)
	if err := m.Prepare(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	return m, rev, cfg.StateDir
}

// fixtureGood makes a 4-commit fixture (fixtureRepo) and a machine lock of
// the test's own; it returns the repository and its good revision.
func fixtureGood(t *testing.T) (*git.Repository, string) {
	t.Helper()
	old := LockPath
	LockPath = filepath.Join(t.TempDir(), "measure.lock")
	t.Cleanup(func() { LockPath = old })
	repo := fixtureRepo(t)
	rev, err := bisect.Resolve(repo, "good")
	if err != nil {
		t.Fatal(err)
	}
	return repo, rev
}

// fixtureRepo makes a 4-commit fixture (scripts/make-fixture.sh) and opens it.
func fixtureRepo(t *testing.T) *git.Repository {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "make-fixture.sh")
	dir := filepath.Join(t.TempDir(), "server")
	if out, err := exec.Command("bash", script, "-q", "-n", "4", "--culprit-pos", "3", "--broken-pos", "0", dir).CombinedOutput(); err != nil {
		t.Fatalf("make-fixture.sh: %v\n%s", err, out)
	}
	repo, err := bisect.OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// A mariadbd killed with SIGKILL during a run (the OOM killer, a user) is not
// the revision's crash: the run is measured again, and the revision stays
// testable.
func TestServerKilledFromOutsideIsRetried(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	o := bench.DefaultOptions()
	o.Workload, o.TableSize, o.Threads, o.Time, o.Warmup = "oltp_read_only", 10000, 2, 2*time.Second, time.Second
	var log strings.Builder
	m, rev, state := fixtureMeasurer(t, Config{Workload: bench.OLTP{Options: o}, Log: &log, DisturbedRetries: -1})
	// Killed as soon as it is seen (while it starts), and once it serves
	// (the warm-up or the window).
	for _, delay := range []time.Duration{0, 1500 * time.Millisecond} {
		log.Reset()
		killed := signalRunServer(state, delay, syscall.SIGKILL)
		runs, err := m.Measure(context.Background(), rev, 1)
		pid := <-killed
		if pid == 0 {
			t.Fatal("no server to kill was seen")
		}
		if err != nil || len(runs) != 1 || runs[0].TPS <= 0 {
			t.Fatalf("after mariadbd (pid %d) was killed with SIGKILL %v after it was seen: runs %v, err %v\n%s", pid, delay, runs, err, log.String())
		}
		if !strings.Contains(log.String(), "retrying (not the revision's fault)") {
			t.Errorf("killed %v after it was seen, the run was not retried as the machine's:\n%s", delay, log.String())
		}
	}
}

// A server that never gets ready (stopped with SIGSTOP as it starts) fails
// the run after StartTimeout as the revision's (the session retries it): the
// stopped server is killed, and the run directory keeps its logs but not its
// datadir copy.
func TestServerThatNeverGetsReady(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	o := bench.DefaultOptions()
	o.Workload, o.TableSize, o.Threads, o.Time, o.Warmup = "oltp_read_only", 10000, 2, 2*time.Second, time.Second
	var log strings.Builder
	m, rev, state := fixtureMeasurer(t, Config{Workload: bench.OLTP{Options: o}, Log: &log, DisturbedRetries: -1, StartTimeout: 2 * time.Second})
	if _, err := m.Measure(context.Background(), rev, 1); err != nil { // the snapshot, and one run that works
		t.Fatal(err)
	}
	stopped := signalRunServer(state, 0, syscall.SIGSTOP)
	_, err := m.Measure(context.Background(), rev, 1)
	pid := <-stopped
	if pid == 0 {
		t.Fatal("no server to stop was seen")
	}
	var u *bisect.UntestableError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "not accepting connections after 2s") {
		t.Fatalf("a server stopped as it started: %v, want the revision's failure after the 2s start timeout", err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the stopped server (pid %d) is still there", pid)
	}
	dirs, _ := filepath.Glob(filepath.Join(state, "runs", "*"))
	if len(dirs) != 1 {
		t.Fatalf("run directories %v, want the failed run's", dirs)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], "data")); err == nil {
		t.Errorf("the failed run's datadir copy is left in %s", dirs[0])
	}
	if _, err := os.Stat(filepath.Join(dirs[0], serverctl.StderrFile)); err != nil {
		ents, _ := os.ReadDir(dirs[0])
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the failed run's logs are gone: %v", names)
	}
}

// signalRunServer watches for the mariadbd of a run under state (its
// runs/ directory) for about 6 s, and sends it sig delay after it is seen;
// the channel gets its pid, or 0 when none was seen.
func signalRunServer(state string, delay time.Duration, sig syscall.Signal) chan int {
	got := make(chan int, 1)
	go func() {
		for range 1200 {
			ents, _ := os.ReadDir("/proc")
			for _, e := range ents {
				b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				if err != nil || !strings.Contains(string(b), filepath.Join(state, "runs")) || !strings.Contains(string(b), "mariadbd") || strings.Contains(string(b), "--print-defaults") {
					continue
				}
				time.Sleep(delay)
				pid, _ := strconv.Atoi(e.Name())
				_ = syscall.Kill(pid, sig)
				got <- pid
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		got <- 0
	}()
	return got
}

// A machine that other processes keep busy (more than BusyShare of its CPU)
// gets no counted run: the run waits for them (Config.QuietPatience, 3 s
// here), then the measurement stops with an error that is the machine's,
// never a run measured beside them.
func TestBusyMachineCountsNoRun(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	o := bench.DefaultOptions()
	o.Workload, o.TableSize, o.Threads, o.Time, o.RangeSize = "oltp_read_only", 10000, 2, time.Second, 100
	var log strings.Builder
	var mu sync.Mutex
	m, rev, _ := fixtureMeasurer(t, Config{Workload: bench.OLTP{Options: o}, Log: lockedWriter{&mu, &log}, QuietPatience: 3 * time.Second})
	// Enough hogs for a third of the machine's CPUs (one on 2 CPUs is half).
	for i := 0; i < max(1, (runtime.NumCPU()+2)/3); i++ {
		hog := exec.Command("sh", "-c", "while :; do :; done")
		if err := hog.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = hog.Process.Kill(); _ = hog.Wait() })
	}
	runs, err := m.Measure(context.Background(), rev, 1)
	mu.Lock()
	t.Logf("runs %v, err %v\nlog:\n%s", runs, err, log.String())
	text := log.String()
	mu.Unlock()
	if err == nil || len(runs) != 0 {
		t.Fatalf("a run counted while other processes burned the machine: %v, %v", runs, err)
	}
	if bisect.IsUntestable(err) || !strings.Contains(err.Error(), "other processes kept the machine busy") || !strings.Contains(err.Error(), "resume when the machine is quiet") {
		t.Errorf("the error does not say it is the machine's: %v", err)
	}
	if !strings.Contains(text, "measured again, not counted") || !strings.Contains(text, "waiting up to 3s") {
		t.Errorf("the log does not say the run was discarded and waited:\n%s", text)
	}
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
