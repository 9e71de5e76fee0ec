package serverctl

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string]string{"": "", "0": "0", " 0 ": "0", "0,0": "0"} {
		c, err := ParseCPUList(in)
		if err != nil || c.String() != want {
			t.Errorf("ParseCPUList(%q) = %q, %v; want %q", in, c, err, want)
		}
	}
	for _, bad := range []string{"a", "1-0", "-1", "0,,1", "0-", "4096"} {
		if _, err := ParseCPUList(bad); !errors.Is(err, ErrCPUList) || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseCPUList(%q): %v", bad, err)
		}
	}
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU")
	}
	a, _ := ParseCPUList("0,1")
	b, _ := ParseCPUList("1")
	z, _ := ParseCPUList("0")
	if a.String() != "0-1" || !a.Overlaps(b) || b.Overlaps(z) || !z.Overlaps(z) {
		t.Errorf("lists: %s %s %s", a, b, z)
	}
}

// threadCPUs returns the CPU lists the threads of pid may run on.
func threadCPUs(t *testing.T, pid int) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*"))
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join(task, "status"))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				out[strings.TrimSpace(v)] = true
			}
		}
	}
	return out
}

// TestPinProcess pins every thread of the test process, checks that a child
// started meanwhile inherits the placement, and that restore puts it back.
func TestPinProcess(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU")
	}
	before := threadCPUs(t, os.Getpid())
	c, _ := ParseCPUList("1")
	restore, err := PinProcess(c)
	if err != nil {
		t.Fatal(err)
	}
	// Threads busy in other goroutines, and a child process.
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var m unix.CPUSet
			unix.SchedGetaffinity(0, &m)
			if m.Count() != 1 || !m.IsSet(1) {
				t.Errorf("a thread of the pinned process runs on %d CPUs", m.Count())
			}
		}()
	}
	wg.Wait()
	out, err := exec.Command("grep", "Cpus_allowed_list", "/proc/self/status").Output()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "\t1") {
		t.Errorf("child of the pinned process: %q %v", out, err)
	}
	if got := threadCPUs(t, os.Getpid()); len(got) != 1 || !got["1"] {
		t.Errorf("threads while pinned: %v", got)
	}
	restore()
	if got := threadCPUs(t, os.Getpid()); !sameKeys(got, before) {
		t.Errorf("threads after restore: %v, before %v", got, before)
	}
}

// TestStartPinned starts the real server on CPU 1: every thread of mysqld runs
// there, and the caller's own placement does not change.
func TestStartPinned(t *testing.T) {
	testenv.Require(t, testenv.Server)
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU")
	}
	in := systemInstall(t)
	ctx := context.Background()
	dir := t.TempDir()
	o := Options{Install: in, RunDir: filepath.Join(dir, "run")}
	if err := Initialize(ctx, o); err != nil {
		t.Fatal(err)
	}
	before := threadCPUs(t, os.Getpid())
	o.CPUs, _ = ParseCPUList("1")
	s, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Kill()
	if got := threadCPUs(t, s.Pid()); len(got) != 1 || !got["1"] {
		t.Errorf("mysqld threads run on %v, want 1", got)
	}
	if l, err := ProcessCPUs(s.Pid()); err != nil || l != "1" {
		t.Errorf("ProcessCPUs = %q, %v", l, err)
	}
	if got := threadCPUs(t, os.Getpid()); !sameKeys(got, before) {
		t.Errorf("the caller's threads changed placement: %v, before %v", got, before)
	}
	if err := s.Stop(ctx); err != nil {
		t.Error(err)
	}
}

func sameKeys(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// TestMachineBusyOfOwnCPUs: a process confined to some CPUs (a runner
// host that is a share of a machine) counts their busy and steal time
// only; unconfined, the machine's cpu line.
func TestMachineBusyOfOwnCPUs(t *testing.T) {
	stat := "cpu  300 0 100 5000 0 0 0 20 0 0\n" +
		"cpu0 250 0 50 2000 0 0 0 15 0 0\n" +
		"cpu1 50 0 50 3000 0 0 0 5 0 0\n" +
		"intr 1 2 3\n"
	busy, steal, err := machineBusy(stat, nil)
	if err != nil || busy.Seconds() != 4 || steal.Milliseconds() != 200 {
		t.Fatalf("whole machine: busy %v steal %v err %v; want 4s, 200ms", busy, steal, err)
	}
	busy, steal, err = machineBusy(stat, map[int]bool{1: true})
	if err != nil || busy.Seconds() != 1 || steal.Milliseconds() != 50 {
		t.Fatalf("CPU 1: busy %v steal %v err %v; want 1s, 50ms", busy, steal, err)
	}
	if _, _, err := machineBusy(stat, map[int]bool{7: true}); err == nil {
		t.Fatal("CPU 7, absent: no error")
	}
	if n := onlineCPUs(stat); n != 2 {
		t.Fatalf("online CPUs %d, want 2", n)
	}
	// This process, pinned to one CPU, counts one.
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var was unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		t.Fatal(err)
	}
	var one unix.CPUSet
	one.Set(1)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Fatal(err)
	}
	defer unix.SchedSetaffinity(0, &was)
	if n := MachineCPUs(); n != 1 {
		t.Fatalf("pinned to CPU 1: MachineCPUs %d, want 1", n)
	}
}
