package serverctl_test

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/internal/neighbour"
	"github.com/perfbisect/perfbisect/serverctl"
)

// spin starts a process that keeps one CPU busy until the test ends.
func spin(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never left spinning in a capped cgroup
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// TestSchedSeesAQuota: a busy process's threads wait for a CPU (run delay)
// and its cgroup is throttled when a CPU quota caps it, and neither when
// it is free.
func TestSchedSeesAQuota(t *testing.T) {
	cg, err := neighbour.New(fmt.Sprintf("perfbisect-test-%d", os.Getpid()))
	if err != nil {
		t.Skipf("%v", err)
	}
	defer cg.Remove()
	cmd := spin(t)
	if err := cg.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	measure := func() (cpu, wait, throttled time.Duration) {
		s0, err := serverctl.ProcessSched(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		th0, ok := serverctl.CgroupThrottle(cmd.Process.Pid)
		if !ok {
			t.Fatalf("no cpu.stat throttled time for the cgroup %s", cg.Dir())
		}
		time.Sleep(time.Second)
		s1, err := serverctl.ProcessSched(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		th1, _ := serverctl.CgroupThrottle(cmd.Process.Pid)
		cpu, wait = s1.Since(s0)
		return cpu, wait, th1.Since(th0)
	}
	freeCPU, freeWait, freeThrottled := measure()
	if err := cg.Limit(0.2); err != nil {
		t.Fatal(err)
	}
	capCPU, capWait, capThrottled := measure()
	t.Logf("free: cpu %v wait %v throttled %v; capped at 0.2 CPU: cpu %v wait %v throttled %v", freeCPU, freeWait, freeThrottled, capCPU, capWait, capThrottled)
	if freeThrottled != 0 || capThrottled < 300*time.Millisecond {
		t.Errorf("throttled %v free, %v capped: want 0, then most of the second", freeThrottled, capThrottled)
	}
	if capWait < 400*time.Millisecond || capWait < 4*freeWait {
		t.Errorf("run delay %v capped against %v free: want most of the second", capWait, freeWait)
	}
	if capCPU > 350*time.Millisecond || freeCPU < 500*time.Millisecond {
		t.Errorf("CPU %v free, %v capped at 0.2 CPU: want most of a second, then about 0.2 s", freeCPU, capCPU)
	}
}
