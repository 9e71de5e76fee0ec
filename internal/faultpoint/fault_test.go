package faultpoint

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestHit runs this test binary as a child that hits "run" five times and
// prints after each hit. Without the faults tag the child always reaches the
// end; with it (go test -tags faults), PERFBISECT_FAULT=run:3 ends the child
// by SIGKILL right after its third hit.
func TestHit(t *testing.T) {
	if os.Getenv("FAULT_TEST_CHILD") == "1" {
		for i := 1; i <= 5; i++ {
			Hit("checkout") // another point: never counts toward run
			Hit("run")
			os.Stdout.WriteString(strconv.Itoa(i) + "\n")
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHit$")
	cmd.Env = append(os.Environ(), "FAULT_TEST_CHILD=1", "PERFBISECT_FAULT=run:3")
	out, err := cmd.Output()
	lines := strings.Fields(string(out))
	var ee *exec.ExitError
	if !Enabled {
		if err != nil || len(lines) < 5 || lines[4] != "5" {
			t.Fatalf("without the faults tag the child must run to its end: %v, output %q", err, out)
		}
		return
	}
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("want the child killed by SIGKILL, got %v", err)
	}
	if len(lines) != 2 || lines[1] != "2" {
		t.Fatalf("want the kill at the third hit (two lines printed), got %q", out)
	}
}
