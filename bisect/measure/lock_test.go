package measure

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"

	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/testenv"
)

func TestMeasurementLockExcludesOtherHolders(t *testing.T) {
	old, oldSay := LockPath, WaitSaidAfter
	LockPath, WaitSaidAfter = filepath.Join(t.TempDir(), "measure.lock"), 0
	defer func() { LockPath, WaitSaidAfter = old, oldSay }()
	// Another process's lock, simulated with a second open file description.
	f, err := os.OpenFile(LockPath, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	f.WriteString("pid 4242, state directory /x, since 10:00:00\n")
	var log strings.Builder
	m := New(Config{Log: &log, StateDir: "/my/state"})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := m.lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lock taken while held elsewhere: %v", err)
	}
	if !strings.Contains(log.String(), "pid 4242, state directory /x") {
		t.Errorf("the wait message does not name the holder: %q", log.String())
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
	unlock, err := m.lock(context.Background())
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	if b, _ := os.ReadFile(LockPath); !strings.HasPrefix(string(b), fmt.Sprintf("pid %d, state directory /my/state,", os.Getpid())) {
		t.Errorf("the holder did not write itself into the lock file: %q", b)
	}
	unlock()
	// Let go, the holder's line is gone: a later waiter never names a
	// process that no longer holds it (nor itself).
	if b, _ := os.ReadFile(LockPath); len(b) != 0 {
		t.Errorf("the lock file still names a holder after release: %q", b)
	}
}

// TestMachineLockTakesTurns: a holder that lets go and asks again at once
// (a session between two runs) does not keep the lock from a process
// waiting for it: the waiter has it at the holder's next release. With
// flock(2) alone the waiter lost nearly every time.
func TestMachineLockTakesTurns(t *testing.T) {
	old, oldSay := LockPath, WaitSaidAfter
	LockPath, WaitSaidAfter = filepath.Join(t.TempDir(), "measure.lock"), 0
	defer func() { LockPath, WaitSaidAfter = old, oldSay }()
	ctx := context.Background()
	unlock, err := MachineLock(ctx, "measuring", "/a", nil)
	if err != nil {
		t.Fatal(err)
	}
	log := &testenv.Buffer{}
	waiterHas := make(chan int, 1)
	cycles := 0 // the holder's releases so far (read by the waiter after it has the lock)
	var mu sync.Mutex
	go func() {
		u, err := MachineLock(ctx, "building 3f2c1a9", "/b", log)
		if err != nil {
			waiterHas <- -1
			return
		}
		mu.Lock()
		n := cycles
		mu.Unlock()
		waiterHas <- n
		time.Sleep(50 * time.Millisecond)
		u()
	}()
	// The waiter says it waits once it is queued.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), "waiting for"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the waiter never said it waits")
		}
	}
	got := -1
	for i := 1; i <= 30 && got < 0; i++ {
		mu.Lock()
		cycles = i
		mu.Unlock()
		unlock()
		if unlock, err = MachineLock(ctx, "measuring", "/a", nil); err != nil {
			t.Fatal(err)
		}
		select {
		case got = <-waiterHas:
		default:
		}
		time.Sleep(20 * time.Millisecond) // a run's window
	}
	unlock()
	if got < 0 {
		select {
		case got = <-waiterHas:
		case <-time.After(5 * time.Second):
		}
	}
	if got != 1 {
		t.Errorf("the waiter had the lock after the holder's release %d, want its first (-1: never in 30)", got)
	}
	if !strings.Contains(log.String(), "waiting for the machine lock") || !strings.Contains(log.String(), "before building 3f2c1a9") {
		t.Errorf("the wait was not said as a wait for the machine lock before the build: %q", log.String())
	}
}

// TestMachineLockPastAStoppedWaiter: a process that holds the queue but
// never takes the free lock (stopped with Ctrl-Z) does not keep others
// waiting: the lock is taken past the queue after two looks; while the lock
// is held, nobody goes past the queue.
func TestMachineLockPastAStoppedWaiter(t *testing.T) {
	old, oldGap := LockPath, QueueGap
	LockPath, QueueGap = filepath.Join(t.TempDir(), "measure.lock"), 100*time.Millisecond
	defer func() { LockPath, QueueGap = old, oldGap }()
	q, err := os.OpenFile(LockPath+QueueSuffix, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if err := syscall.Flock(int(q.Fd()), syscall.LOCK_EX); err != nil { // the stopped waiter
		t.Fatal(err)
	}
	// The lock held by another process too: no one goes past the queue.
	holder, err := os.OpenFile(LockPath, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	if _, err := MachineLock(ctx, "measuring", "/a", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("taken while another process held the lock: %v", err)
	}
	cancel()
	holder.Close()
	log := &testenv.Buffer{}
	start := time.Now()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	unlock, err := MachineLock(ctx, "measuring", "/a", log)
	if err != nil {
		t.Fatalf("a stopped queue holder kept the free lock from a waiter: %v", err)
	}
	if took := time.Since(start); took < 2*QueueGap {
		t.Errorf("taken past the queue after %s: before two looks %s apart", took, QueueGap)
	}
	if !strings.Contains(log.String(), "taken past the queue") {
		t.Errorf("the log does not say the queue was passed: %q", log.String())
	}
	// It holds the lock: another process cannot take it.
	other, _ := os.OpenFile(LockPath, os.O_RDWR, 0)
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		t.Error("the lock taken past the queue is not held")
	}
	other.Close()
	unlock()

	// A queue holder that says who it is and is stopped is passed at the
	// first look, and named.
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	_ = sleeper.Process.Signal(syscall.SIGSTOP)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", sleeper.Process.Pid))
		if strings.Contains(string(st), ") T ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sleep was not stopped")
		}
	}
	q.Truncate(0)
	q.WriteAt([]byte(fmt.Sprintf("%d\n", sleeper.Process.Pid)), 0)
	log = &testenv.Buffer{}
	unlock, err = MachineLock(ctx, "measuring", "/a", log)
	if err != nil {
		t.Fatalf("a stopped queue holder kept the free lock: %v", err)
	}
	unlock()
	if !strings.Contains(log.String(), fmt.Sprintf("pid %d holds its queue", sleeper.Process.Pid)) {
		t.Errorf("the stopped queue holder is not named: %q", log.String())
	}
}

// TestLockPathIgnoresTMPDIR: two perfbisects with different TMPDIRs share
// one machine lock (a lock under $TMPDIR let a helper's demo measure beside
// a bisection, every run of both disturbed).
func TestLockPathIgnoresTMPDIR(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	if d := lockDir(); d != "/run/lock" && d != "/tmp" {
		t.Errorf("lock directory %s", d)
	}
	if strings.HasPrefix(LockPath, os.Getenv("TMPDIR")) || filepath.Dir(LockPath) != lockDir() {
		t.Errorf("LockPath %s is not in the machine's lock directory %s", LockPath, lockDir())
	}
}

type oneCommitRepo struct {
	repo *git.Repository
	head string
}

// gitRepoWithCommit is a real git repository with one empty commit.
func gitRepoWithCommit(t *testing.T) oneCommitRepo {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "one"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	return oneCommitRepo{repo, head.Hash().String()}
}

// A build step waits while another perfbisect measures (holds the machine
// lock), and holds the lock while it runs: a window waits for it. The wait is
// not counted against --build-timeout.
func TestBuildStepsTakeTheMachineLock(t *testing.T) {
	old := LockPath
	LockPath = filepath.Join(t.TempDir(), "measure.lock")
	defer func() { LockPath = old }()
	repo := gitRepoWithCommit(t)
	state := t.TempDir()
	marks := filepath.Join(t.TempDir(), "marks")
	b := &build.Builder{Repo: repo.repo, StateDir: state, Timeout: time.Second, Recipe: build.Recipe{BuildCmd: `echo start >> ` + marks + `; sleep 0.5; ` +
		`mkdir -p "$DESTDIR$PREFIX/bin" && cp /bin/true "$DESTDIR$PREFIX/bin/mariadbd"; echo end >> ` + marks}}
	var log strings.Builder
	New(Config{Builder: b, StateDir: state, Log: &log}) // wires the lock into the builder
	// Another process measures (a second open file description of the lock).
	f, err := os.OpenFile(LockPath, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := b.Build(context.Background(), repo.head); done <- err }()
	time.Sleep(1500 * time.Millisecond) // longer than --build-timeout
	if m, _ := os.ReadFile(marks); len(m) > 0 {
		t.Fatalf("the build step ran while another perfbisect measured: %q", m)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	// While the step runs, the lock is the build's.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m, _ := os.ReadFile(marks); strings.HasPrefix(string(m), "start") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the build did not start after the lock was released")
		}
		time.Sleep(10 * time.Millisecond)
	}
	holder, _ := os.ReadFile(LockPath)
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		if m, _ := os.ReadFile(marks); !strings.Contains(string(m), "end") {
			t.Error("a window could start while a build step ran")
		}
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	if err := <-done; err != nil {
		t.Fatalf("build after the wait: %v (the wait counted against --build-timeout?)", err)
	}
	if !strings.Contains(string(holder), "building ") {
		t.Errorf("the lock file does not say a build holds it: %q", holder)
	}
}

// TestLockStateDirNamesTheHolder: a second session on a state directory is
// refused at once, naming the directory and the holder's pid; the lock file
// is private (0600); once released, the directory can be taken again.
func TestLockStateDirNamesTheHolder(t *testing.T) {
	dir := t.TempDir()
	release, err := LockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, StateLockFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("lock file mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	// flock(2) locks belong to the open file: a second open conflicts, as
	// another process's would.
	_, err = LockStateDir(dir)
	if err == nil {
		t.Fatal("a second LockStateDir of a held directory succeeded")
	}
	for _, want := range []string{dir, fmt.Sprintf("pid %d", os.Getpid()), "in use by another perfbisect"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	release()
	again, err := LockStateDir(dir)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
	// No directory is not the working directory: perfbisect log once
	// left a session.lock wherever it ran.
	t.Chdir(t.TempDir())
	if _, err := LockStateDir(""); err == nil {
		t.Error(`LockStateDir("") succeeded`)
	}
	if _, err := os.Stat(StateLockFile); err == nil {
		t.Errorf(`LockStateDir("") made %s in the working directory`, StateLockFile)
	}
}

// TestMachineLockNeverWritesAnotherFile: a machine lock path that names a
// directory, or a file that is not a perfbisect lock, is refused and left
// as it was (PERFBISECT_MACHINE_LOCK is the user's to give).
func TestMachineLockNeverWritesAnotherFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "notes")
	if err := os.WriteFile(file, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, file} {
		if f, err := openLockFile(p); err == nil {
			f.Close()
			t.Errorf("openLockFile(%s): no error", p)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "secret" {
		t.Errorf("the file now holds %q", b)
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
		t.Errorf("the file's mode is %v", st.Mode())
	}
	if st, _ := os.Stat(dir); st.Mode().Perm()&0o100 == 0 {
		t.Errorf("the directory's mode is %v", st.Mode())
	}
	f, err := openLockFile(filepath.Join(dir, "new.lock"))
	if err != nil {
		t.Fatalf("a new lock file: %v", err)
	}
	f.Close()
}
