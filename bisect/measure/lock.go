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
// must still find the same lock (lockDir).
var LockPath = filepath.Join(lockDir(), "perfbisect-measure.lock")

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
	logf := func(format string, args ...any) {
		if log != nil {
			fmt.Fprintf(log, format+"\n", args...)
		}
	}
	f, err := openLockFile(LockPath)
	if err != nil {
		return nil, err
	}
	q, err := openLockFile(LockPath + QueueSuffix)
	if err != nil {
		f.Close()
		return nil, err
	}
	fd, qfd := int(f.Fd()), int(q.Fd())
	// hold makes main, a lock file this process holds, the lock's holder.
	spoke := false // the wait was said: its end is said too
	hold := func(main *os.File, waited time.Duration) (func(), error) {
		// Say who holds it, for those who wait.
		if err := main.Truncate(0); err == nil {
			_, _ = main.WriteAt([]byte(fmt.Sprintf("pid %d, state directory %s, %s since %s\n", os.Getpid(), stateDir, activity, time.Now().Format("15:04:05"))), 0)
		}
		if spoke {
			logf("got the machine lock after %s", waited.Round(time.Second))
		}
		return func() {
			_ = main.Truncate(0) // a waiter must not read a holder that let go
			_ = syscall.Flock(int(main.Fd()), syscall.LOCK_UN)
			main.Close()
		}, nil
	}
	took := func(waited time.Duration) (func(), error) {
		_ = q.Truncate(0)
		_ = syscall.Flock(qfd, syscall.LOCK_UN)
		q.Close()
		return hold(f, waited)
	}
	fail := func(err error) (func(), error) {
		f.Close()
		q.Close()
		return nil, fmt.Errorf("machine lock %s: %w", LockPath, err)
	}
	// The queue's holder says who it is, so that a waiter can see it stopped.
	inQueueNow := func() {
		if err := q.Truncate(0); err == nil {
			_, _ = q.WriteAt([]byte(fmt.Sprintf("%d\n", os.Getpid())), 0)
		}
	}
	queued := syscall.Flock(qfd, syscall.LOCK_EX|syscall.LOCK_NB)
	if queued == nil {
		inQueueNow()
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return took(0)
		}
		if err != syscall.EWOULDBLOCK {
			return fail(err)
		}
	} else if queued != syscall.EWOULDBLOCK {
		return fail(queued)
	}
	// Wait in the kernel (a blocking flock is woken when the holder lets go),
	// first for the queue unless it is ours already, then for the lock.
	since := time.Now()
	var said string
	next := time.Minute
	say := func(force bool) {
		b, _ := os.ReadFile(LockPath)
		holder := "another perfbisect holds it: " + strings.TrimSpace(string(b))
		if len(b) == 0 || strings.HasPrefix(string(b), fmt.Sprintf("pid %d,", os.Getpid())) {
			holder = "another perfbisect holds it or waits ahead" // just taken, or a line of our own earlier hold
		}
		waited := time.Since(since)
		if !force && holder == said && waited < next {
			return
		}
		for waited >= next {
			if next < 8*time.Minute {
				next *= 2
			} else {
				next += 10 * time.Minute
			}
		}
		said, spoke = holder, true
		logf("waiting for the machine lock %s (%s so far) before %s: %s", LockPath,
			waited.Round(time.Second), activity, holder)
	}
	first := time.NewTimer(WaitSaidAfter)
	defer first.Stop()
	got := make(chan error, 1)
	var mu sync.Mutex // abandoned, and the hand-over through got
	abandoned := false
	var inQueue atomic.Bool // the queue is ours (then the lock is next)
	if queued == nil {
		inQueue.Store(true)
	}
	go func() {
		wait := func(fd int) error {
			for {
				if err := syscall.Flock(fd, syscall.LOCK_EX); err != syscall.EINTR {
					return err
				}
			}
		}
		var err error
		if queued != nil {
			err = wait(qfd)
		}
		if err == nil {
			inQueue.Store(true)
			inQueueNow()
			err = wait(fd)
		}
		mu.Lock()
		defer mu.Unlock()
		if abandoned { // the caller gave up: let go at once
			if inQueue.Load() {
				_ = q.Truncate(0)
			}
			f.Close()
			q.Close()
			return
		}
		got <- err
	}()
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	// A process that holds the queue takes the lock the moment it is free.
	// One that does not (stopped with Ctrl-Z, say) must not keep every
	// other perfbisect waiting: the lock found free at two looks a queue
	// gap apart, while the queue is still not ours, is taken past it.
	gap := time.NewTicker(QueueGap)
	defer gap.Stop()
	freeBefore := false
	abandon := func() {
		mu.Lock()
		abandoned = true
		select { // the waiting goroutine may have got it just now
		case <-got:
			_ = q.Truncate(0)
			f.Close() // closing lets go of both locks
			q.Close()
		default:
		}
		mu.Unlock()
	}
	for {
		select {
		case err := <-got:
			if err != nil {
				return fail(err)
			}
			return took(time.Since(since))
		case <-first.C:
			say(true)
		case <-tick.C:
			if spoke {
				say(false)
			}
		case <-gap.C:
			if inQueue.Load() {
				continue
			}
			f2, err := openLockFile(LockPath)
			if err != nil {
				continue
			}
			if syscall.Flock(int(f2.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
				f2.Close()
				freeBefore = false
				continue
			}
			stopped := queueHolderStopped()
			if !freeBefore && stopped == "" {
				freeBefore = true
				_ = syscall.Flock(int(f2.Fd()), syscall.LOCK_UN)
				f2.Close()
				continue
			}
			if stopped == "" {
				stopped = "another process"
			}
			logf("the machine lock is free, but %s holds its queue without taking it (stopped?): taken past the queue", stopped)
			abandon()
			return hold(f2, time.Since(since))
		case <-ctx.Done():
			abandon()
			return nil, ctx.Err()
		}
	}
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
