// Package reap finds and kills processes left behind by an earlier perfbisect
// that died without cleaning up (kill -9, a crashed machine session): servers and
// build processes (make, compilers). Every child perfbisect starts carries the
// environment variable EnvVar naming the state directory it works for, which its
// own children inherit; a process is a leftover when it names exactly this state
// directory (symlinks resolved), so sessions on other, even nested, state
// directories are never touched. Servers get a
// parent-death signal already; the build tool's children do not, so they are
// found here. Nothing else is ever matched: a user's shell inside the state
// directory is not touched.
//
// Call it only while holding the state directory's lock: then no live
// perfbisect can own such a process.
package reap

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is a leftover process.
type Process struct {
	Pid     int
	Command string // command line, arguments joined by spaces
}

// EnvVar marks a child process with the directory it works for.
const EnvVar = "PERFBISECT_OWNER"

// Mark returns env with the owner mark for the state directory dir added (env
// nil means the current environment).
func Mark(env []string, dir string) []string {
	if env == nil {
		env = os.Environ()
	}
	return append(env, EnvVar+"="+Canonical(dir))
}

// Canonical is dir made absolute with symlinks resolved (as far as it exists),
// so that one directory has one name in marks.
func Canonical(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = filepath.Clean(dir)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

// Find lists the processes (other than this one and its ancestors) marked as
// working for dir.
func Find(dir string) []Process {
	dir = Canonical(dir)
	skip := ancestors()
	ents, _ := os.ReadDir("/proc")
	var out []Process
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || skip[pid] {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // gone, or another user's
		}
		owned := false
		for _, kv := range strings.Split(string(env), "\x00") {
			if v, ok := strings.CutPrefix(kv, EnvVar+"="); ok && v == dir {
				owned = true
				break
			}
		}
		if !owned {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, Process{Pid: pid, Command: strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))})
	}
	return out
}

// Kill sends SIGKILL to each process (and its process group when it leads one)
// and waits up to 5 seconds for them to go. It returns the ones killed.
func Kill(ps []Process) []Process {
	var killed []Process
	for _, p := range ps {
		if pgid, err := syscall.Getpgid(p.Pid); err == nil && pgid == p.Pid {
			_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
		}
		if syscall.Kill(p.Pid, syscall.SIGKILL) == nil {
			killed = append(killed, p)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range killed {
		for time.Now().Before(deadline) && alive(p.Pid) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return killed
}

// KillGroup sends SIGKILL to the process group pgid and waits up to
// timeout until none of its processes is alive. A zombie is not alive: it
// holds no file and no memory, and its reaper (init, or a machine's
// slower process manager) may take seconds to collect it.
func KillGroup(pgid int, timeout time.Duration) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline) && groupAlive(pgid); time.Sleep(10 * time.Millisecond) {
	}
}

// groupAlive reports whether a process of group pgid exists and is not a
// zombie.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if state, pgrp, ok := procState(e.Name()); ok && state != "Z" && pgrp == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	state, _, ok := procState(strconv.Itoa(pid))
	return ok && state != "Z"
}

// procState reads /proc/PID/stat of pid (a /proc entry's name): its state
// ("R", "S", "Z", ...) and process group, which follow the command's
// closing parenthesis; ok is false when it is gone or not a process.
func procState(pid string) (state, pgrp string, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return "", "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", "", false
	}
	f := strings.Fields(s[i+1:]) // state ppid pgrp ...
	if len(f) < 3 {
		return "", "", false
	}
	return f[0], f[2], true
}

// ancestors returns this process and its ancestors' pids.
func ancestors() map[int]bool {
	m := map[int]bool{}
	pid := os.Getpid()
	for pid > 1 && !m[pid] {
		m[pid] = true
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			break
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			break
		}
		pid, _ = strconv.Atoi(f[1])
	}
	return m
}
