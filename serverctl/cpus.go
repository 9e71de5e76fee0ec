package serverctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CPUList is a set of CPU numbers in taskset/cpuset list form ("0", "0-3,6").
// The zero value means no placement: the process keeps the CPUs it inherits.
type CPUList struct {
	set  unix.CPUSet
	list string // canonical form, "" for none
}

// ErrCPUList is wrapped by ParseCPUList errors.
var ErrCPUList = errors.New("CPU list")

// ParseCPUList reads a CPU list ("2", "0-1", "0,2-3") and checks every CPU
// against the ones this process may use (sched_getaffinity). "" is no
// placement. Errors wrap ErrCPUList and name the list and the usable CPUs.
func ParseCPUList(s string) (CPUList, error) {
	var c CPUList
	s = strings.TrimSpace(s)
	if s == "" {
		return c, nil
	}
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return c, fmt.Errorf("%w %q: %v", ErrCPUList, s, err)
	}
	usable := setList(&allowed)
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return c, fmt.Errorf("%w %q: %q is not a CPU number or a range like 0-3", ErrCPUList, s, part)
		}
		for i := a; i <= b; i++ {
			if !allowed.IsSet(i) {
				return c, fmt.Errorf("%w %q: CPU %d is not one this process may use (usable: %s)", ErrCPUList, s, i, usable)
			}
			c.set.Set(i)
		}
	}
	c.list = setList(&c.set)
	return c, nil
}

// String is the canonical list ("0-1,3"), "" for no placement.
func (c CPUList) String() string { return c.list }

// IsZero reports whether c is no placement.
func (c CPUList) IsZero() bool { return c.list == "" }

// Overlaps reports whether c and d share a CPU.
func (c CPUList) Overlaps(d CPUList) bool {
	for i := 0; i < len(c.set)*64; i++ {
		if c.set.IsSet(i) && d.set.IsSet(i) {
			return true
		}
	}
	return false
}

// setList renders a CPU set in list form.
func setList(s *unix.CPUSet) string {
	var ids []int
	for i := 0; i < len(s)*64; i++ {
		if s.IsSet(i) {
			ids = append(ids, i)
		}
	}
	sort.Ints(ids)
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(ids[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// startPinned runs start (which forks a child, e.g. exec.Cmd.Start) on an OS
// thread whose affinity is c, so the child and every thread it creates inherit
// c; the thread's own affinity is restored afterwards. A zero c runs start as it
// is.
func startPinned(c CPUList, start func() error) error {
	if c.IsZero() {
		return start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return fmt.Errorf("cpu placement: %w", err)
	}
	if err := unix.SchedSetaffinity(0, &c.set); err != nil {
		return fmt.Errorf("cpu placement on %s: %w", c, err)
	}
	err := start()
	if rerr := unix.SchedSetaffinity(0, &old); rerr != nil && err == nil {
		return fmt.Errorf("cpu placement: restore: %w", rerr)
	}
	return err
}

// PinProcess sets the affinity of every thread of this process to c (threads
// created later inherit it from their creator) and returns a function that
// puts back each thread's previous affinity (threads created meanwhile get the
// process's first one). The client side of a run uses it: the built-in
// workload's threads, or sysbench started during the run. A zero c changes
// nothing.
func PinProcess(c CPUList) (restore func(), err error) {
	if c.IsZero() {
		return func() {}, nil
	}
	var first unix.CPUSet
	if err := unix.SchedGetaffinity(0, &first); err != nil {
		return nil, fmt.Errorf("cpu placement: %w", err)
	}
	old := map[int]unix.CPUSet{}
	tids := func() []int {
		ents, _ := os.ReadDir("/proc/self/task")
		var out []int
		for _, e := range ents {
			if id, err := strconv.Atoi(e.Name()); err == nil {
				out = append(out, id)
			}
		}
		return out
	}
	// Two passes: a thread created while the first pass ran inherits either
	// mask; the second catches it.
	for pass := 0; pass < 2; pass++ {
		for _, tid := range tids() {
			if _, done := old[tid]; !done {
				var m unix.CPUSet
				if unix.SchedGetaffinity(tid, &m) != nil {
					continue // exited
				}
				old[tid] = m
			}
			if err := unix.SchedSetaffinity(tid, &c.set); err != nil && !errors.Is(err, unix.ESRCH) {
				return nil, fmt.Errorf("cpu placement of thread %d on %s: %w", tid, c, err)
			}
		}
	}
	return func() {
		for pass := 0; pass < 2; pass++ {
			for _, tid := range tids() {
				m, ok := old[tid]
				if !ok {
					m = first
				}
				_ = unix.SchedSetaffinity(tid, &m)
			}
		}
	}, nil
}

// ProcessCPUs returns the CPU list process pid may run on, as the kernel
// reports it (Cpus_allowed_list in /proc/PID/status): what a run records.
func ProcessCPUs(pid int) (string, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("/proc/%d/status: no Cpus_allowed_list", pid)
}
