package measure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// LockPath is the machine-wide lock: a measured window of one
// perfbisect process never overlaps another's window or build step (two
// servers, or a server and a compiler, on a small machine make each other's
// numbers meaningless). See MachineLock. It is in the machine's lock
// directory, never under $TMPDIR: two perfbisects with different TMPDIRs
// must still find the same lock (lockDir). The environment's
// PERFBISECT_MACHINE_LOCK names another: a host's own, where several
// runner hosts are made on one machine (each a container or a cgroup with
// CPUs of its own) and must not wait for one another.
var LockPath = lockPath()

func lockPath() string {
	if p := os.Getenv("PERFBISECT_MACHINE_LOCK"); p != "" {
		return p
	}
	return filepath.Join(lockDir(), "perfbisect-measure.lock")
}

// lockDir is /run/lock (the FHS directory for lock files, 1777 on Debian)
// when every user may write there, else /tmp: root and the other users of
// a machine must pick the same one.
func lockDir() string {
	if st, err := os.Stat("/run/lock"); err == nil && st.IsDir() && st.Mode().Perm()&0o002 != 0 {
		return "/run/lock"
	}
	return "/tmp"
}

// StateLockFile, in a state directory, is held for a whole session: two sessions
// sharing builds and datadir snapshots would overwrite each other's.
const StateLockFile = "session.lock"

// ErrStateDirInUse is LockStateDir's error when another perfbisect holds the
// state directory (errors.Is), as opposed to a lock file that cannot be
// opened (a read-only disk).
var ErrStateDirInUse = errors.New("in use by another perfbisect")

// LockStateDir takes the state directory's lock without waiting. It returns an
// error naming the directory and the holder (its pid and since when),
// wrapping ErrStateDirInUse, when another perfbisect holds it; the returned
// function releases it (so does the process's death). An empty dir is an
// error (it would lock the working directory).
func LockStateDir(dir string) (func(), error) {
	if dir == "" {
		return nil, errors.New("state directory lock: no state directory given")
	}
	p := filepath.Join(dir, StateLockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state directory lock %s: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(p)
		f.Close()
		who := strings.TrimSpace(string(holder))
		if who == "" {
			who = "an older perfbisect"
		}
		return nil, fmt.Errorf("state directory %s is %w (%s): wait for it to end, or use another state directory", dir, ErrStateDirInUse, who)
	}
	_ = f.Chmod(0o600) // a lock file of an older perfbisect was 0644
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d, since %s", os.Getpid(), time.Now().Format(time.DateTime))), 0)
	}
	return func() {
		_ = f.Truncate(0)
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// lock takes the machine lock for a measured window or a datadir's
// preparation (see MachineLock).
func (m *Measurer) lock(ctx context.Context) (func(), error) {
	return MachineLock(ctx, "measuring", m.cfg.StateDir, m.cfg.Log)
}

// QueueSuffix names the machine lock's queue file (LockPath +
// QueueSuffix): see MachineLock.
const QueueSuffix = ".queue"

// QueueGap is how long the machine lock must stay free while another
// process holds its queue before a waiter takes it past the queue (that
// process is stopped, or hung); a live queue holder takes it in
// milliseconds.
var QueueGap = 2 * time.Second

// WaitSaidAfter is how long a wait for the machine lock lasts before it is
// said (a turn between another session's runs takes a second or two, and
// saying each would fill the log).
var WaitSaidAfter = 5 * time.Second

// MachineLock takes the machine-wide lock (flock(2) on LockPath) for activity
// ("measuring", "building 3f2c1a9"), waiting while another process holds
// it, until ctx ends. Measured windows and build steps of every perfbisect
// on the machine take it, so that no window overlaps another perfbisect's
// window or compiler. The returned function releases it; the kernel releases
// it too when the process dies. Errors: a lock file cannot be opened; ctx's
// error.
//
// Turns are fair between perfbisects: flock(2) alone is not (a holder that
// lets go and asks again at once, as a session does between two runs, wins
// over a process asleep in the kernel, which then waits for the whole
// session). So a process passes a queue lock (LockPath+QueueSuffix) before
// it waits for the lock and lets the queue go once it holds the lock: a
// holder asking again finds the queue held by the waiter and takes its turn
// after it. While waiting it says on log (may be nil) who holds the lock:
// at once, when the holder changes, and after 1, 2, 4, 8 minutes and every
// 10 minutes then.
func MachineLock(ctx context.Context, activity, stateDir string, log io.Writer) (func(), error) {
	f, err := openLockFile(LockPath)
	if err != nil {
		return nil, err
	}
	q, err := openLockFile(LockPath + QueueSuffix)
	if err != nil {
		f.Close()
		return nil, err
	}
	l := &machineLock{activity: activity, stateDir: stateDir, log: log, f: f, q: q, next: time.Minute, got: make(chan error, 1)}
	queued := syscall.Flock(int(q.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if queued == nil {
		l.inQueueNow()
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return l.took(0)
		}
		if err != syscall.EWOULDBLOCK {
			return l.fail(err)
		}
		l.inQueue.Store(true)
	} else if queued != syscall.EWOULDBLOCK {
		return l.fail(queued)
	}
	l.since = time.Now()
	go l.waitInKernel(queued == nil)
	return l.wait(ctx)
}

// machineLock is one MachineLock call: its lock and queue files, and what it
// has said while waiting.
type machineLock struct {
	activity, stateDir string
	log                io.Writer
	f, q               *os.File // the lock, the queue

	since time.Time     // the wait's start
	spoke bool          // the wait was said: its end is said too
	said  string        // the holder last said
	next  time.Duration // the wait's length at which it is said again

	got       chan error  // waitInKernel's result
	mu        sync.Mutex  // abandoned, and the hand-over through got
	abandoned bool        // the caller gave up
	inQueue   atomic.Bool // the queue is ours (then the lock is next)
}

func (l *machineLock) logf(format string, args ...any) {
	if l.log != nil {
		fmt.Fprintf(l.log, format+"\n", args...)
	}
}

// hold makes main, a lock file this process holds, the lock's holder: it
// says who holds it, for those who wait, and returns its release.
func (l *machineLock) hold(main *os.File, waited time.Duration) (func(), error) {
	if err := main.Truncate(0); err == nil {
		_, _ = main.WriteAt([]byte(fmt.Sprintf("pid %d, state directory %s, %s since %s\n", os.Getpid(), l.stateDir, l.activity, time.Now().Format("15:04:05"))), 0)
	}
	if l.spoke {
		l.logf("got the machine lock after %s", waited.Round(time.Second))
	}
	return func() {
		_ = main.Truncate(0) // a waiter must not read a holder that let go
		_ = syscall.Flock(int(main.Fd()), syscall.LOCK_UN)
		main.Close()
	}, nil
}

// took lets the queue go once the lock is held.
func (l *machineLock) took(waited time.Duration) (func(), error) {
	_ = l.q.Truncate(0)
	_ = syscall.Flock(int(l.q.Fd()), syscall.LOCK_UN)
	l.q.Close()
	return l.hold(l.f, waited)
}

func (l *machineLock) fail(err error) (func(), error) {
	l.f.Close()
	l.q.Close()
	return nil, fmt.Errorf("machine lock %s: %w", LockPath, err)
}

// inQueueNow writes this process into the queue file it holds, so that a
// waiter can see it stopped.
func (l *machineLock) inQueueNow() {
	if err := l.q.Truncate(0); err == nil {
		_, _ = l.q.WriteAt([]byte(fmt.Sprintf("%d\n", os.Getpid())), 0)
	}
}

// waitInKernel waits in the kernel (a blocking flock is woken when the
// holder lets go), first for the queue unless it is ours already, then for
// the lock, and hands the result over through got (or lets go at once when
// the caller gave up meanwhile).
func (l *machineLock) waitInKernel(queued bool) {
	wait := func(fd int) error {
		for {
			if err := syscall.Flock(fd, syscall.LOCK_EX); err != syscall.EINTR {
				return err
			}
		}
	}
	var err error
	if !queued {
		err = wait(int(l.q.Fd()))
	}
	if err == nil {
		l.inQueue.Store(true)
		l.inQueueNow()
		err = wait(int(l.f.Fd()))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.abandoned {
		if l.inQueue.Load() {
			_ = l.q.Truncate(0)
		}
		l.f.Close()
		l.q.Close()
		return
	}
	l.got <- err
}

// wait waits for waitInKernel, saying who holds the lock (at once after
// WaitSaidAfter, when the holder changes, after 1, 2, 4, 8 minutes and every
// 10 minutes then), and takes the lock past a queue its holder does not use
// (takePastQueue), until ctx ends.
func (l *machineLock) wait(ctx context.Context) (func(), error) {
	first := time.NewTimer(WaitSaidAfter)
	defer first.Stop()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	gap := time.NewTicker(QueueGap)
	defer gap.Stop()
	freeBefore := false
	for {
		select {
		case err := <-l.got:
			if err != nil {
				return l.fail(err)
			}
			return l.took(time.Since(l.since))
		case <-first.C:
			l.say(true)
		case <-tick.C:
			if l.spoke {
				l.say(false)
			}
		case <-gap.C:
			if l.inQueue.Load() {
				continue
			}
			if f2 := l.pastQueue(&freeBefore); f2 != nil {
				l.abandon()
				return l.hold(f2, time.Since(l.since))
			}
		case <-ctx.Done():
			l.abandon()
			return nil, ctx.Err()
		}
	}
}

// pastQueue returns the lock, held, when the queue's holder does not take it:
// a process that holds the queue takes the lock the moment it is free, and
// one that does not (stopped with Ctrl-Z, say) must not keep every other
// perfbisect waiting. The lock found free at two looks a queue gap apart
// (*freeBefore carries the first), or once while the queue's holder is seen
// stopped, is taken past the queue. Otherwise nil.
func (l *machineLock) pastQueue(freeBefore *bool) *os.File {
	f2, err := openLockFile(LockPath)
	if err != nil {
		return nil
	}
	if syscall.Flock(int(f2.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		f2.Close()
		*freeBefore = false
		return nil
	}
	stopped := queueHolderStopped()
	if !*freeBefore && stopped == "" {
		*freeBefore = true
		_ = syscall.Flock(int(f2.Fd()), syscall.LOCK_UN)
		f2.Close()
		return nil
	}
	if stopped == "" {
		stopped = "another process"
	}
	l.logf("the machine lock is free, but %s holds its queue without taking it (stopped?): taken past the queue", stopped)
	return f2
}

// abandon gives the wait up: waitInKernel lets go of what it gets from now
// on, and of what it got just now.
func (l *machineLock) abandon() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.abandoned = true
	select {
	case <-l.got:
		_ = l.q.Truncate(0)
		l.f.Close() // closing lets go of both locks
		l.q.Close()
	default:
	}
}

// say says who holds the lock, when forced, when the holder changed, or at
// the next of the wait's lengths that are said.
func (l *machineLock) say(force bool) {
	b, _ := os.ReadFile(LockPath)
	holder := "another perfbisect holds it: " + strings.TrimSpace(string(b))
	if len(b) == 0 || strings.HasPrefix(string(b), fmt.Sprintf("pid %d,", os.Getpid())) {
		holder = "another perfbisect holds it or waits ahead" // just taken, or a line of our own earlier hold
	}
	waited := time.Since(l.since)
	if !force && holder == l.said && waited < l.next {
		return
	}
	for waited >= l.next {
		if l.next < 8*time.Minute {
			l.next *= 2
		} else {
			l.next += 10 * time.Minute
		}
	}
	l.said, l.spoke = holder, true
	l.logf("waiting for the machine lock %s (%s so far) before %s: %s", LockPath,
		waited.Round(time.Second), l.activity, holder)
}

// queueHolderStopped names the process the machine lock's queue file says
// holds the queue ("pid 4242") when that process is stopped (Ctrl-Z,
// SIGSTOP, a debugger), else "".
func queueHolderStopped() string {
	b, err := os.ReadFile(LockPath + QueueSuffix)
	if err != nil {
		return ""
	}
	pid := strings.TrimSpace(string(b))
	if pid == "" || pid == fmt.Sprint(os.Getpid()) {
		return ""
	}
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return ""
	}
	// The state follows the command name in parentheses: "4242 (pb) T ...".
	if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && (stat[i+2] == 'T' || stat[i+2] == 't') {
		return "pid " + pid
	}
	return ""
}

// openLockFile opens (creating) a machine lock file that every user of the
// machine shares.
func openLockFile(p string) (*os.File, error) {
	if st, err := os.Lstat(p); err == nil && !st.Mode().IsRegular() {
		// PERFBISECT_MACHINE_LOCK naming a directory, a device: never
		// written, never chmod'ed.
		return nil, fmt.Errorf("machine lock %s: not a regular file (%s): name a lock file's path (PERFBISECT_MACHINE_LOCK)", p, st.Mode().Type())
	} else if err == nil && st.Size() > 0 {
		if b, rerr := os.ReadFile(p); rerr == nil && !ourLock(string(b)) {
			return nil, fmt.Errorf("machine lock %s: a file that is not a perfbisect lock (it holds %d bytes of something else): name a new path (PERFBISECT_MACHINE_LOCK)", p, st.Size())
		}
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		// Another user's lock file that we may only read still locks.
		if f, err = os.Open(p); err != nil {
			return nil, fmt.Errorf("machine lock %s: %w", p, err)
		}
	}
	_ = f.Chmod(0o666) // every user of the machine shares it (umask would narrow it)
	return f, nil
}

// ourLock reports whether text is what a perfbisect writes into a machine
// lock ("pid N, ...") or its queue ("N\n"), or nothing.
func ourLock(text string) bool {
	if text == "" || strings.HasPrefix(text, "pid ") {
		return true
	}
	n := strings.TrimSpace(text)
	return n != "" && strings.Trim(n, "0123456789") == ""
}
