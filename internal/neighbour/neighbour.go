// Package neighbour makes the neighbours a shared host gives a measurement,
// on this machine and on purpose, for tests and scripts/faults: a CPU quota
// on a cgroup holding perfbisect and the server it measures, switched on at
// random moments (descheduling no steal counter shows), and a memory
// bandwidth hog in a cgroup of its own. Both need root and a CPU cgroup
// controller (v1's cpu hierarchy or v2's cpu.max).
package neighbour

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/perfbisect/perfbisect/serverctl"
)

// ErrNoCgroup is returned when no CPU cgroup controller can be written here
// (not root, or none mounted).
var ErrNoCgroup = errors.New("no writable CPU cgroup controller (needs root and cgroup v1's cpu hierarchy or v2's cpu.max)")

// Cgroup is a CPU cgroup made by New, removed by Remove.
type Cgroup struct {
	dir  string
	root string
	v2   bool
	mu   sync.Mutex
	from map[int]string // the cgroup each process added came from
}

// New makes the CPU cgroup name (a directory under the hierarchy's root).
// Errors: ErrNoCgroup, or the directory cannot be made.
func New(name string) (*Cgroup, error) {
	root, v2 := serverctl.CPUCgroupRoot()
	if root == "" || os.Geteuid() != 0 {
		return nil, ErrNoCgroup
	}
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		return nil, fmt.Errorf("%w: %v", ErrNoCgroup, err)
	}
	limit := "cpu.cfs_quota_us"
	if v2 {
		limit = "cpu.max" // only where the root's subtree_control enables cpu
	}
	if _, err := os.Stat(filepath.Join(dir, limit)); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("%w: the new cgroup %s has no %s", ErrNoCgroup, dir, limit)
	}
	return &Cgroup{dir: dir, root: root, v2: v2, from: map[int]string{}}, nil
}

// Dir is the cgroup's directory.
func (c *Cgroup) Dir() string { return c.dir }

// Add moves process pid (all its threads; its children to come) into the
// cgroup; Remove moves it back.
func (c *Cgroup) Add(pid int) error {
	from := serverctl.ProcessCgroupDir(pid)
	if err := os.WriteFile(filepath.Join(c.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return err
	}
	c.mu.Lock()
	c.from[pid] = from
	c.mu.Unlock()
	return nil
}

// Limit caps the cgroup's processes at cpus CPUs' worth of time per 100 ms
// period (0.5: half of one CPU); 0 takes the cap away.
func (c *Cgroup) Limit(cpus float64) error {
	const period = 100000 // µs
	quota := -1
	if cpus > 0 {
		quota = int(cpus * period)
	}
	if c.v2 {
		v := "max 100000"
		if quota > 0 {
			v = fmt.Sprintf("%d %d", quota, period)
		}
		return os.WriteFile(filepath.Join(c.dir, "cpu.max"), []byte(v), 0o644)
	}
	if err := os.WriteFile(filepath.Join(c.dir, "cpu.cfs_period_us"), []byte(strconv.Itoa(period)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.dir, "cpu.cfs_quota_us"), []byte(strconv.Itoa(quota)), 0o644)
}

// Remove takes the cap away, moves the processes still in the cgroup back
// where Add found them (their children to the hierarchy's root) and removes
// it.
func (c *Cgroup) Remove() error {
	_ = c.Limit(0)
	b, _ := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	for _, p := range strings.Fields(string(b)) {
		to := c.root
		pid, _ := strconv.Atoi(p)
		c.mu.Lock()
		if f := c.from[pid]; f != "" && f != c.dir {
			to = f
		}
		c.mu.Unlock()
		if os.WriteFile(filepath.Join(to, "cgroup.procs"), []byte(p), 0o644) != nil {
			_ = os.WriteFile(filepath.Join(c.root, "cgroup.procs"), []byte(p), 0o644)
		}
	}
	var err error
	for i := 0; i < 50; i++ { // a process moved out leaves the cgroup busy for a moment
		if err = os.Remove(c.dir); err == nil || os.IsNotExist(err) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// Schedule is when a random neighbour is there: it comes after a pause drawn
// uniformly from [MinOff, MaxOff] and stays for one from [MinOn, MaxOn].
type Schedule struct {
	MinOff, MaxOff, MinOn, MaxOn time.Duration
}

func (s Schedule) draw(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)))
}

// Counter counts a random neighbour's visits and the time it was there.
type Counter struct {
	mu     sync.Mutex
	visits int
	on     time.Duration
}

// Visits returns how many times the neighbour came and how long it stayed
// in all.
func (c *Counter) Visits() (int, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.visits, c.on
}

func (c *Counter) add(d time.Duration) {
	c.mu.Lock()
	c.visits++
	c.on += d
	c.mu.Unlock()
}

// Throttle caps cg at cpus CPUs at the random moments of s until ctx ends,
// then takes the cap away; it returns at once and counts the visits in the
// Counter it returns. wait waits until the cap is gone.
func Throttle(ctx context.Context, cg *Cgroup, cpus float64, s Schedule, seed uint64) (c *Counter, wait func()) {
	c = &Counter{}
	r := rand.New(rand.NewPCG(seed, 1))
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cg.Limit(0)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(s.draw(r, s.MinOff, s.MaxOff)):
			}
			on := s.draw(r, s.MinOn, s.MaxOn)
			if cg.Limit(cpus) == nil {
				c.add(on)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(on):
			}
			_ = cg.Limit(0)
		}
	}()
	return c, func() { <-done }
}

// Hog runs a memory bandwidth hog (dd copying 32 MB blocks from /dev/zero to
// /dev/null: a 32 MB memset per block, past any cache) in cg at the random
// moments of s until ctx ends; it returns at once and counts the visits in
// the Counter it returns. wait waits until the last hog is gone.
func Hog(ctx context.Context, cg *Cgroup, s Schedule, seed uint64) (c *Counter, wait func()) {
	c = &Counter{}
	r := rand.New(rand.NewPCG(seed, 2))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(s.draw(r, s.MinOff, s.MaxOff)):
			}
			on := s.draw(r, s.MinOn, s.MaxOn)
			cmd := exec.Command("dd", "if=/dev/zero", "of=/dev/null", "bs=32M")
			if err := cmd.Start(); err != nil {
				continue
			}
			_ = cg.Add(cmd.Process.Pid)
			c.add(on)
			select {
			case <-ctx.Done():
			case <-time.After(on):
			}
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if ctx.Err() != nil {
				return
			}
		}
	}()
	return c, func() { <-done }
}
