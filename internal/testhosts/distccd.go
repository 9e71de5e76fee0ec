// Package testhosts starts the test hosts of the multi-machine tests on this
// machine: real daemons, each on its own loopback address (127.0.0.2,
// 127.0.0.3, ...) or in its own network namespace on a private bridge, so
// traffic goes to them and nowhere else.
// They live as long as the test (or script, T) that started them.
package testhosts

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

// T is what starting test hosts needs of a test (testing.TB has it; a
// measuring script gives its own): a failure stops the caller, and what is
// started is stopped by a cleanup.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Distccd is a distcc daemon listening on one loopback address.
type Distccd struct {
	Addr  string // "127.0.0.2:3632"
	Host  string // "127.0.0.2"
	Slots int    // its --jobs

	cmd  *exec.Cmd
	log  testenv.Buffer // what it logs (to its stderr)
	done chan struct{}
}

// StartDistccd starts distccd on host (a loopback address such as
// "127.0.0.2") at its default port, taking slots compiles at once from
// clients on 127.0.0.0/8, and waits until it answers. The test fails when
// it does not start; the daemon and its children are killed when the test
// ends.
func StartDistccd(t T, host string, slots int) *Distccd {
	t.Helper()
	if !strings.HasPrefix(host, "127.") {
		t.Fatalf("test host %s: want a loopback address (127.0.0.2, ...)", host)
	}
	d := &Distccd{Addr: net.JoinHostPort(host, "3632"), Host: host, Slots: slots, done: make(chan struct{})}
	args := []string{"--daemon", "--no-detach", "--log-stderr", "--log-level=info",
		"--listen", host, "--port", "3632", "--allow", "127.0.0.0/8", "--jobs", fmt.Sprint(slots)}
	if os.Geteuid() == 0 {
		args = append(args, "--user", "nobody") // distccd will not compile as root
	}
	d.cmd = exec.Command("distccd", args...)
	d.cmd.Stdout, d.cmd.Stderr = &d.log, &d.log
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("distccd on %s: %v", host, err)
	}
	go func() { _ = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(d.Kill)
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", d.Addr, time.Second)
		if err == nil {
			c.Close()
			return d
		}
		select {
		case <-d.done:
			t.Fatalf("distccd on %s exited: %s", host, d.Log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("distccd on %s does not answer after 10s (%v): %s", host, err, d.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill kills the daemon and its children at once (a host that dies), and
// waits for it. Safe to call twice.
func (d *Distccd) Kill() {
	if d.cmd.Process != nil {
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-d.done
}

// Log is what the daemon logged so far.
func (d *Distccd) Log() string { return d.log.String() }

// Compiled counts the compiles the daemon says it completed for a client
// (its job summaries with COMPILE_OK).
func (d *Distccd) Compiled() int {
	return strings.Count(d.Log(), "COMPILE_OK")
}
