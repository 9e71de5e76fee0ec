package serverctl

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sched is what the kernel's scheduler accounted to each thread of a process
// at one moment: CPU time and run delay (time spent runnable, waiting for a
// CPU), from /proc/PID/task/TID/schedstat.
type Sched struct {
	threads map[int][2]int64 // tid -> {cpu ns, run delay ns}
}

// ProcessSched reads the schedstat of every thread of process pid. Errors:
// the process is gone, or the kernel keeps no schedstat (CONFIG_SCHED_INFO
// off).
func ProcessSched(pid int) (Sched, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return Sched{}, fmt.Errorf("threads of pid %d: %w", pid, err)
	}
	s := Sched{threads: make(map[int][2]int64, len(ents))}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
		if err != nil {
			if os.IsNotExist(err) {
				// A thread that ended between the listing and the read.
				if _, serr := os.Stat(filepath.Join(dir, e.Name())); serr != nil {
					continue
				}
			}
			return Sched{}, fmt.Errorf("schedstat of pid %d: %w", pid, err)
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			return Sched{}, fmt.Errorf("schedstat of pid %d thread %d: unexpected %q", pid, tid, b)
		}
		cpu, err1 := strconv.ParseInt(f[0], 10, 64)
		wait, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return Sched{}, fmt.Errorf("schedstat of pid %d thread %d: unexpected %q", pid, tid, b)
		}
		s.threads[tid] = [2]int64{cpu, wait}
	}
	return s, nil
}

// Since returns the CPU time and the run delay that the threads present in
// both s and earlier accumulated between the two readings (threads that
// began or ended in between are left out: their share of the interval is
// not known).
func (s Sched) Since(earlier Sched) (cpu, wait time.Duration) {
	for tid, v := range s.threads {
		if e, ok := earlier.threads[tid]; ok && v[0] >= e[0] && v[1] >= e[1] {
			cpu += time.Duration(v[0] - e[0])
			wait += time.Duration(v[1] - e[1])
		}
	}
	return cpu, wait
}

// Throttle is the time the CPU controller throttled a process's cgroup and
// each of its ancestors (a CPU quota: cgroup v2's cpu.max, v1's
// cpu.cfs_quota_us) at one moment, from their cpu.stat files.
type Throttle struct {
	byDir map[string]time.Duration // cgroup directory -> throttled time
}

// CgroupThrottle reads the throttled time of process pid's CPU
// cgroup and its ancestors up to its hierarchy's root (in a container, the
// container's cgroup, where its limit is). ok is false when no throttled
// time can be read (no CPU controller mounted, a cgroup without cpu.stat):
// then nothing can be said of throttling.
func CgroupThrottle(pid int) (t Throttle, ok bool) {
	dirs := cpuCgroupDirs(pid)
	t.byDir = map[string]time.Duration{}
	for _, d := range dirs {
		if v, ok := readThrottled(filepath.Join(d, "cpu.stat")); ok {
			t.byDir[d] = v
		}
	}
	return t, len(t.byDir) > 0
}

// Since returns the longest time any of the cgroups was throttled between
// earlier and t: a quota on an ancestor throttles every cgroup under it
// while counting only in its own cpu.stat. cpu.stat sums the time over the
// CPUs the cgroup ran on.
func (t Throttle) Since(earlier Throttle) time.Duration {
	var most time.Duration
	for d, v := range t.byDir {
		if e, ok := earlier.byDir[d]; ok && v-e > most {
			most = v - e
		}
	}
	return most
}

// readThrottled reads a cpu.stat's throttled time: throttled_usec (cgroup v2)
// or throttled_time in nanoseconds (v1).
func readThrottled(path string) (time.Duration, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, " ")
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "throttled_usec":
			return time.Duration(n) * time.Microsecond, true
		case "throttled_time":
			return time.Duration(n), true
		}
	}
	return 0, false
}

// cgroupMount is where a cgroup hierarchy is mounted, and which of its
// cgroups the mount shows at that place (a container's own cgroup, "/" on
// a host).
type cgroupMount struct{ dir, root string }

// cpuCgroupDirs returns the directories of pid's CPU cgroup and its ancestors
// up to the mounted hierarchy's top, that included, through the mount of
// the hierarchy that has the cpu controller: a v1 hierarchy naming "cpu"
// among its controllers, else the v2 hierarchy. The paths in /proc/PID/cgroup
// are the hierarchy's (or, in a cgroup namespace, the namespace's); the
// mount's own root is taken off them.
func cpuCgroupDirs(pid int) []string {
	mounts := cgroupMounts()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return nil
	}
	var m cgroupMount
	var path string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			if m.dir == "" && mounts["cgroup2"].dir != "" {
				m, path = mounts["cgroup2"], parts[2]
			}
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "cpu" && mounts["cpu"].dir != "" {
				m, path = mounts["cpu"], parts[2]
			}
		}
	}
	if m.dir == "" {
		return nil
	}
	path = filepath.Clean("/" + path)
	if r := filepath.Clean("/" + m.root); r != "/" {
		if rel, err := filepath.Rel(r, path); err == nil && !strings.HasPrefix(rel, "..") {
			path = "/" + rel
		}
	}
	var dirs []string
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		dirs = append(dirs, filepath.Join(m.dir, p))
		if p == "/" || p == "." {
			break
		}
	}
	return dirs
}

// cgroupMounts maps "cpu" to the mount of the v1 hierarchy with the cpu
// controller and "cgroup2" to the v2 hierarchy's, from /proc/self/mountinfo.
func cgroupMounts() map[string]cgroupMount {
	out := map[string]cgroupMount{}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 {
			continue
		}
		m := cgroupMount{dir: pf[4], root: pf[3]}
		switch qf[0] {
		case "cgroup2":
			if out["cgroup2"].dir == "" {
				out["cgroup2"] = m
			}
		case "cgroup":
			for _, o := range strings.Split(qf[2], ",") {
				if o == "cpu" && out["cpu"].dir == "" {
					out["cpu"] = m
				}
			}
		}
	}
	return out
}

// CPUCgroupRoot returns the mount point of the cgroup hierarchy that has the
// CPU controller and whether it is cgroup v2 ("" when none is mounted).
func CPUCgroupRoot() (root string, v2 bool) {
	m := cgroupMounts()
	if m["cpu"].dir != "" {
		return m["cpu"].dir, false
	}
	if r := m["cgroup2"].dir; r != "" {
		if b, err := os.ReadFile(filepath.Join(r, "cgroup.controllers")); err == nil && slices.Contains(strings.Fields(string(b)), "cpu") {
			return r, true
		}
	}
	return "", false
}

// ProcessCgroupDir returns the directory of pid's CPU cgroup ("" when none
// is mounted).
func ProcessCgroupDir(pid int) string {
	if d := cpuCgroupDirs(pid); len(d) > 0 {
		return d[0]
	}
	return ""
}
