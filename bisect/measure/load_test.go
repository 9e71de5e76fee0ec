package measure

import (
	"os/exec"
	"testing"
	"time"
)

// The CPU time another process uses during a window is counted as the
// machine's other load (at the kernel's 10 ms resolution), and the load
// average is read.
func TestLoadProbeCountsOtherProcesses(t *testing.T) {
	var p loadProbe
	p.begin()
	burn := exec.Command("sh", "-c", `end=$(($(date +%s%N) + 400000000)); while [ $(date +%s%N) -lt $end ]; do :; done`)
	if err := burn.Run(); err != nil {
		t.Fatal(err)
	}
	p.end()
	child := burn.ProcessState.UserTime() + burn.ProcessState.SystemTime()
	other, steal, loadavg, ok := p.other(0)
	if !ok {
		t.Fatalf("nothing measured: %v", p.err)
	}
	// Every tick of the child's is the machine's and neither perfbisect's nor
	// the server's; ticks are 10 ms, the child's own accounting finer.
	if other < child-30*time.Millisecond {
		t.Errorf("another process used %v of CPU; counted as other: %v", child, other)
	}
	if loadavg < 0 || steal < 0 {
		t.Errorf("load average %v, steal %v", loadavg, steal)
	}
	if o, _, _, _ := p.other(time.Hour); o != 0 {
		t.Errorf("the server's CPU time is not taken off: %v", o)
	}
}
