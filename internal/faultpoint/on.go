//go:build faults

package faultpoint

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Enabled reports whether this binary was built with the fault points
// (the "faults" build tag).
const Enabled = true

var (
	mu     sync.Mutex
	counts = map[string]int{}
	spec   = parse(os.Getenv("PERFBISECT_FAULT"))
)

type plan struct {
	point string
	n     int
	delay time.Duration
}

func parse(s string) plan {
	if s == "" {
		return plan{}
	}
	f := strings.Split(s, ":")
	p := plan{point: f[0], n: 1}
	if len(f) > 1 {
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "perfbisect: PERFBISECT_FAULT=%q: N must be a count from 1\n", s)
			os.Exit(2)
		}
		p.n = n
	}
	if len(f) > 2 {
		d, err := time.ParseDuration(f[2])
		if err != nil || d < 0 {
			fmt.Fprintf(os.Stderr, "perfbisect: PERFBISECT_FAULT=%q: DELAY must be a duration (700ms)\n", s)
			os.Exit(2)
		}
		p.delay = d
	}
	return p
}

// arrived counts one arrival at point and reports whether it is the Nth
// arrival at the point PERFBISECT_FAULT names.
func arrived(point string) bool {
	if spec.point != point {
		return false
	}
	mu.Lock()
	defer mu.Unlock()
	counts[point]++
	return counts[point] == spec.n
}

// Hit counts one arrival at point and, when PERFBISECT_FAULT names it and
// this is its Nth arrival, kills the process with SIGKILL after the delay
// (at once when it is 0).
func Hit(point string) {
	if !arrived(point) {
		return
	}
	kill := func() {
		fmt.Fprintf(os.Stderr, "perfbisect: fault %s:%d: SIGKILL\n", point, spec.n)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	if spec.delay == 0 {
		kill()
		select {} // the signal is on its way
	}
	time.AfterFunc(spec.delay, kill)
}

// TakenPort returns, at the Nth call when PERFBISECT_FAULT is port-taken:N,
// a loopback TCP port that a listener of this process holds for the rest of
// its life; else 0.
func TakenPort() int {
	if !arrived("port-taken") {
		return 0
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	held = append(held, l) // never closed
	fmt.Fprintf(os.Stderr, "perfbisect: fault port-taken:%d: port %d is held\n", spec.n, l.Addr().(*net.TCPAddr).Port)
	return l.Addr().(*net.TCPAddr).Port
}

var held []net.Listener

// Hang stops the process pid (SIGSTOP) at the Nth call when
// PERFBISECT_FAULT is server-hang:N: a server that never gets ready (it
// holds its port and files, and answers nothing). Stopped, it still dies of
// SIGKILL.
func Hang(pid int) {
	if !arrived("server-hang") {
		return
	}
	fmt.Fprintf(os.Stderr, "perfbisect: fault server-hang:%d: server pid %d stopped\n", spec.n, pid)
	_ = syscall.Kill(pid, syscall.SIGSTOP)
}
