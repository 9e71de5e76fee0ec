// Command faults injects faults into real bisections of the fixture and prints
// what survived: for each fault, the trials, the sessions that ended with the
// right answer, runs lost (stored before the fault, gone after), runs
// measured twice (the resume measured more runs than the store gained),
// wrong answers, servers and processes left, temporary files left (under
// the state directory's runs/ and under the trial's TMPDIR), and for the
// neighbour faults the runs measured again (what they cost).
//
//	go run ./scripts/faults [-trials N] [-faults LIST] [-out FILE]
//	go run ./scripts/faults -trials 5 -faults kill-perfbisect,sigint,kill-mysqld
//	go run ./scripts/faults -faults kill-at=20,kill-at,disk-full=4 ...
//
// perfbisect is built with the "faults" tag (internal/faultpoint), which
// lets a trial kill it at an exact point. Faults (-faults, comma separated;
// default all):
//
//	kill-perfbisect  SIGKILL of perfbisect after a random number of stored
//	                 runs (1 to two fewer than an uninterrupted session of
//	                 the fixture stores, measured first), then resume
//	kill-at          SIGKILL at an exact point (PERFBISECT_FAULT): a
//	                 checkout's file write, configure, build or install
//	                 (a random delay into the step), a datadir preparation,
//	                 a measured window, a store write; the points in turn,
//	                 the Nth arrival at random; then resume
//	sigint, sigterm, sighup
//	                 the signal to perfbisect after a random number of runs:
//	                 it must exit 130 and resume
//	kill-mysqld      SIGKILL of the measured mariadbd during a random run:
//	                 the run is measured again, never counted
//	port-taken       the Nth server start (at random) gets a port another
//	                 socket holds: the start is retried on another port
//	server-hang      the Nth server start (at random) is stopped (SIGSTOP)
//	                 before it accepts connections, a server that never
//	                 gets ready: --start-timeout (10 s) fails the start, the
//	                 stopped server is killed and the run taken again; the
//	                 revision is not blamed
//	hung-build       the Nth build (at random, after the endpoints) hangs;
//	                 --build-timeout kills it and the revision is skipped:
//	                 the answer holds the culprit, nothing is left running
//	disk-full        (root) the state directory on a tmpfs, filled after a
//	                 random number of runs and kept full: perfbisect stops
//	                 saying the disk is full, blames no revision, and resumes
//	                 once the space is back
//	disk-full-prepare
//	                 (root) as disk-full, filled as the next datadir
//	                 preparation after a random run initialises (or, at
//	                 random, loads) its datadir: the server waits for space
//	                 there instead of failing, and perfbisect must stop
//	read-only        (root) the same tmpfs remounted read-only after a
//	                 session is interrupted at a random run (Linux refuses
//	                 it while the store is open for writing): status must
//	                 show the session, resume must stop saying so, and
//	                 resume once it is writable
//	long-tmpdir      TMPDIR 180 bytes long (a unix socket path holds 107)
//	two-sessions     a second start on the state directory of a running one:
//	                 refused at once, naming the first; the first goes on
//	two-dirs         two sessions on two state directories at once: both
//	                 answer right, and their runs never overlap in time
//	corrupt-store    the store of a finished session truncated, a page
//	                 overwritten with garbage or its header zeroed; status,
//	                 log, report and resume must not panic, must name the
//	                 file when they fail, and must leave it as it was
//	throttle         (root) a CPU quota of 0.4 CPU on the cgroup of perfbisect
//	                 and its servers, on for 1-3 s at random every 3-11 s,
//	                 through the whole session: no steal or other
//	                 process shows it; the session must name the culprit,
//	                 and the runs it measured again are its cost
//	memory-hog       (root) a memory bandwidth hog (dd of 32 MB blocks) in a
//	                 cgroup of its own, on for 1-3 s at random every 4-13 s
//
// The faults take turns (one trial of each per round, so a suite stopped
// early has them all), each until it has its trials with the fault
// injected (a session that ended before its fault is tried again, at most
// three times the trials in all; later faults are then drawn inside the
// shorter session). Each trial bisects a fresh state directory of one
// 8-commit fixture (scripts/make-fixture.sh -n 8 --culprit-pos 5
// --broken-pos 3: a broken build, then its fix) with short
// runs (0.5 s windows, 3 runs a look), with a TMPDIR of its own. Trials
// append one line each to -out (default faults.tsv in the current directory),
// so an interrupted suite resumes where it stopped, and the table is printed
// from that file. It starts real servers and builds: run it alone on an idle
// machine; a trial takes 1-3 minutes (corrupt-store a second).
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/internal/faultpoint"
	"github.com/perfbisect/perfbisect/internal/neighbour"
	_ "modernc.org/sqlite" // the store's driver, read-only here
)

var allFaults = []string{"kill-perfbisect", "kill-at", "sigint", "sigterm", "sighup", "kill-mysqld", "port-taken",
	"server-hang", "hung-build", "disk-full", "disk-full-prepare", "read-only", "long-tmpdir", "two-sessions", "two-dirs", "corrupt-store",
	"throttle", "memory-hog"}

// needsRoot are the faults that mount a filesystem or make a cgroup.
var needsRoot = map[string]bool{"disk-full": true, "disk-full-prepare": true, "read-only": true, "throttle": true, "memory-hog": true}

// trial is one injected fault and what it left.
type trial struct {
	fault     string
	at        int  // runs stored when the fault was injected (kill-at, port-taken, hung-build: N)
	survived  bool // the session ended with the right answer
	lost      int  // runs stored before the fault and gone after
	twice     int  // runs the resume measured beyond what the store gained
	wrong     bool // a first bad commit other than the culprit
	processes int  // servers or perfbisects of the trial still running
	tempFiles int  // datadirs left under the state directory's runs/, files under the trial's TMPDIR
	injected  bool // the fault happened (the session had not ended before it)
	note      string
	again     int // runs measured again, not counted (the neighbours' cost)
}

// fixture is the repository every trial bisects.
type fixture struct {
	bin, repo, culprit, broken string
	total                      int    // runs an uninterrupted session stores
	refStore                   string // that session's store (corrupt-store copies it)
	work                       string
}

func main() {
	trials := flag.Int("trials", 3, "trials per fault (a fault written NAME=N in -faults takes N)")
	faults := flag.String("faults", strings.Join(allFaults, ","), "faults to inject, comma separated, in turn (NAME=N: N trials of it; a name twice: two trials a round)")
	out := flag.String("out", "faults.tsv", "file the trials are appended to (resumable)")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "random seed of the injection points")
	flag.Parse()
	var order []string
	want := map[string]int{}
	for _, f := range strings.Split(*faults, ",") {
		name, n, hasN := strings.Cut(f, "=")
		if !slices.Contains(allFaults, name) {
			fmt.Fprintf(os.Stderr, "faults: unknown fault %q (want %s)\n", name, strings.Join(allFaults, ", "))
			os.Exit(2)
		}
		if needsRoot[name] && os.Geteuid() != 0 {
			fmt.Fprintf(os.Stderr, "faults: %s mounts a tmpfs: run as root, or leave it out of -faults\n", name)
			os.Exit(2)
		}
		if _, ok := want[name]; !ok {
			want[name] = *trials
		}
		if hasN {
			v, err := strconv.Atoi(n)
			if err != nil || v < 0 {
				fmt.Fprintf(os.Stderr, "faults: %q: want NAME=N, N a number of trials\n", f)
				os.Exit(2)
			}
			want[name] = v
		}
		order = append(order, name)
	}
	if err := run(order, want, *out, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(1)
	}
}

// run injects the faults in turn (one trial of each per round, in order)
// until each has its wanted trials in out with the fault injected (a
// session may end before its fault comes: that trial is tried again, up to
// three times the wanted number of trials in all).
func run(faults []string, want map[string]int, out string, seed uint64) error {
	done, tried, err := readDone(out)
	if err != nil {
		return err
	}
	more := func(f string) bool { return done[f] < want[f] && tried[f] < 3*want[f] }
	todo := false
	for _, f := range faults {
		todo = todo || more(f)
	}
	if !todo {
		return printTable(out)
	}
	work, err := os.MkdirTemp("", "faults-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	fx := &fixture{work: work, bin: filepath.Join(work, "perfbisect"), repo: filepath.Join(work, "server")}
	if b, err := exec.Command("go", "build", "-tags", "faults", "-o", fx.bin, "./cmd/perfbisect").CombinedOutput(); err != nil {
		return fmt.Errorf("go build (run this in the repository's root): %v\n%s", err, b)
	}
	if b, err := exec.Command("bash", "scripts/make-fixture.sh", "-q", "-n", "8", "--culprit-pos", "5", "--broken-pos", "3", fx.repo).CombinedOutput(); err != nil {
		return fmt.Errorf("make-fixture.sh: %v\n%s", err, b)
	}
	fx.culprit, fx.broken = fixtureVar(fx.repo, "CULPRIT_SHA"), fixtureVar(fx.repo, "BROKEN_SHA")
	rng := rand.New(rand.NewPCG(seed, 7))
	// An uninterrupted session first: how many runs a whole one stores, so
	// that every fault falls inside a session.
	ref := filepath.Join(work, "state-reference")
	b, err := exec.Command(fx.bin, fx.startArgs(ref)...).CombinedOutput()
	fx.total = len(storedRuns(ref))
	if err != nil || fx.total < 4 || !strings.Contains(string(b), fx.culprit) {
		return fmt.Errorf("the uninterrupted session (%d runs): %v\n%s", fx.total, err, b)
	}
	fx.refStore = filepath.Join(ref, store.FileName)
	fmt.Fprintf(os.Stderr, "faults: an uninterrupted session stores %d runs; faults come after 1..%d\n", fx.total, fx.total-2)
	f, err := os.OpenFile(out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for progressed := true; progressed; {
		progressed = false
		for _, fault := range faults {
			if !more(fault) {
				continue
			}
			progressed = true
			i := tried[fault]
			state := filepath.Join(work, fmt.Sprintf("state-%s-%d", fault, i))
			tmp := filepath.Join(work, fmt.Sprintf("tmp-%s-%d", fault, i))
			if fault == "long-tmpdir" {
				tmp = filepath.Join(tmp, strings.Repeat("long-temporary-directory/", 7))
			}
			if err := os.MkdirAll(tmp, 0o700); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "faults: %s, trial %d (%d of %d injected so far)\n", fault, i+1, done[fault], want[fault])
			t := fx.inject(fault, i, state, tmp, rng)
			fmt.Fprintf(os.Stderr, "faults: %+v\n", t)
			fmt.Fprintf(f, "%s\t%d\t%v\t%d\t%d\t%v\t%d\t%d\t%v\t%s\t%d\n", t.fault, t.at, t.survived, t.lost, t.twice, t.wrong, t.processes, t.tempFiles, t.injected, strings.ReplaceAll(t.note, "\t", " "), t.again)
			// A session that ended before its fault stored fewer runs than
			// the reference (the run count varies with the noise): later
			// faults are drawn inside that length.
			if n := len(storedRuns(state)); !t.injected && strings.Contains(t.note, "ended before") && n >= 4 && n < fx.total {
				fmt.Fprintf(os.Stderr, "faults: a session stored %d runs: faults now come after 1..%d\n", n, n-2)
				fx.total = n
			}
			if t.injected && (!t.survived || t.wrong || t.lost > 0 || t.twice > 0 || t.processes > 0) && fault != "corrupt-store" {
				// What went wrong is in the trial's store and logs: kept.
				kept := filepath.Join(os.TempDir(), fmt.Sprintf("perfbisect-faults-kept-%s-%d-%d", fault, i, os.Getpid()))
				from := state
				if _, err := os.Stat(tmpfsSaved(state)); err == nil {
					from = tmpfsSaved(state) // the tmpfs is gone
				}
				if err := os.Rename(from, kept); err == nil {
					fmt.Fprintf(os.Stderr, "faults: kept the trial's state directory in %s\n", kept)
				}
			}
			_ = os.RemoveAll(state)
			_ = os.RemoveAll(tmpfsSaved(state))
			_ = os.RemoveAll(filepath.Join(work, fmt.Sprintf("tmp-%s-%d", fault, i)))
			tried[fault]++
			if t.injected {
				done[fault]++
			}
		}
	}
	return printTable(out)
}

// workload is every trial's: short runs, a table that does not fit the
// culprit's buffer pool.
var workload = []string{"--threads", "2", "--tables", "1", "--time", "0.5", "--warmup", "0.2", "--repeats", "3", "--table-size", "100000", "--range-size", "1000", "--rand-type", "uniform"}

func (fx *fixture) startArgs(state string, extra ...string) []string {
	args := append([]string{"start", "--repo", fx.repo, "--good", "good", "--bad", "bad", "--state-dir", state}, workload...)
	return append(args, extra...)
}

var liveRun = regexp.MustCompile(`(?m)^run [0-9a-f]{10}: [0-9.]+ tps`)

// session is one running perfbisect.
type session struct {
	cmd    *exec.Cmd
	out    *bytes.Buffer
	exited chan error
}

func (fx *fixture) start(state, tmp string, env []string, args ...string) (*session, error) {
	cmd := exec.Command(fx.bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(append(os.Environ(), "TMPDIR="+tmp), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &session{cmd: cmd, out: &out, exited: make(chan error, 1)}
	go func() { s.exited <- cmd.Wait() }()
	return s, nil
}

// waitRuns waits until state holds at least n stored runs (true) or the
// session exits first (false, its exit error in *exitErr).
func (s *session) waitRuns(state string, n int, exitErr *error) bool {
	deadline := time.Now().Add(15 * time.Minute)
	for {
		select {
		case *exitErr = <-s.exited:
			return false
		case <-time.After(time.Second):
		}
		if time.Now().After(deadline) {
			_ = s.cmd.Process.Kill()
			*exitErr = <-s.exited
			return false
		}
		if len(storedRuns(state)) >= n {
			return true
		}
	}
}

// tmpfsSaved is where a trial whose state directory is a tmpfs saves its
// store and logs before the tmpfs goes.
func tmpfsSaved(state string) string { return state + "-saved" }

// waitPreparation waits for a datadir preparation of the session on state:
// its initialiser (mariadbd --bootstrap), or with load the server that
// loads the tables. It returns false when the session ends first.
func (s *session) waitPreparation(state string, load bool, exitErr *error) bool {
	for {
		select {
		case *exitErr = <-s.exited:
			return false
		case <-time.After(20 * time.Millisecond):
		}
		for _, p := range processesUnder(filepath.Join(state, "datadirs")) {
			boot := strings.Contains(p.cmdline, "--bootstrap")
			if strings.Contains(p.cmdline, "mariadbd") && !strings.Contains(p.cmdline, "--print-defaults") && boot != load {
				return true
			}
		}
	}
}

// resume runs perfbisect resume on state, returning its output and error.
func (fx *fixture) resume(state, tmp string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	r := exec.CommandContext(ctx, fx.bin, "resume", "--state-dir", state)
	var out bytes.Buffer
	r.Stdout, r.Stderr = &out, &out
	r.Env = append(os.Environ(), "TMPDIR="+tmp)
	r.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	err := r.Run()
	return out.String(), err
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func killedBySIGKILL(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

var firstBad = regexp.MustCompile(`first bad commit: ([0-9a-f]{40})`)

// judge fills the answer fields of t from the session's last output and
// exit, and what it left.
func (fx *fixture) judge(t *trial, state, tmp, out string, exitErr error, before []float64, sockets map[string]bool) {
	after := storedRuns(state)
	for i := range before {
		if i >= len(after) || after[i] != before[i] {
			t.lost++
		}
	}
	m := firstBad.FindStringSubmatch(out)
	t.survived = exitErr == nil && m != nil && m[1] == fx.culprit
	t.wrong = m != nil && m[1] != fx.culprit
	if bad := fx.blamed(state, faultReason[t.fault]); len(bad) > 0 {
		t.survived = false
		t.note = strings.TrimPrefix(t.note+"; untestable beyond the broken build: "+strings.Join(bad, " "), "; ")
	}
	if exitErr != nil && !strings.Contains(t.note, "exit") {
		t.note = strings.TrimPrefix(t.note+fmt.Sprintf("; exit %v: %s", exitErr, lastLine(out)), "; ")
	}
	time.Sleep(time.Second) // a server dies by its parent-death signal
	t.processes = len(processesUnder(state)) + len(processesUnder("sleep 3601"))
	left := leftovers(state, tmp, sockets)
	if t.tempFiles = len(left); t.tempFiles > 0 {
		t.note = strings.TrimPrefix(t.note+"; left: "+strings.Join(left, " "), "; ")
	}
}

// faultReason is the failure a fault causes on purpose (a build killed at
// --build-timeout, a start that timed out): a revision stored as untestable
// for it is not blamed for the fault (a candidate's failed run is stored, so
// that a resumed session replays the same retry).
var faultReason = map[string]string{"hung-build": "--build-timeout", "server-hang": "not accepting connections after"}

// blamed lists the commits other than the broken build (and those whose
// stored failure says fault, the failure the fault causes) that the latest
// start session of state stored as untestable.
func (fx *fixture) blamed(state string, fault string) []string {
	db, err := openStore(state)
	if err != nil {
		return nil
	}
	defer db.Close()
	rows, err := db.Query(`SELECT commit_hash, reason || ' ' || error FROM events WHERE session = (SELECT max(id) FROM sessions WHERE kind = 'start') AND reason != ''`)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c, why string
		if rows.Scan(&c, &why) != nil || c == fx.broken || fault != "" && strings.Contains(why, fault) {
			continue
		}
		if h := fmt.Sprintf("%.10s", c); !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// inject runs one trial of fault.
func (fx *fixture) inject(fault string, i int, state, tmp string, rng *rand.Rand) trial {
	t := trial{fault: fault}
	// Only a TMPDIR too long for a socket sends the socket directories to
	// /tmp, where other perfbisects (a test suite) keep theirs too: the
	// other faults count what is left in the trial's own TMPDIR.
	var sockets map[string]bool
	if fault == "long-tmpdir" {
		sockets = socketDirs()
	}
	switch fault {
	case "corrupt-store":
		return fx.corruptStore(i, state, rng)
	case "throttle", "memory-hog":
		return fx.neighbours(fault, i, state, tmp, rng)
	case "two-dirs":
		return fx.twoDirs(state, tmp, sockets)
	case "disk-full", "disk-full-prepare", "read-only":
		if err := os.MkdirAll(state, 0o700); err != nil {
			t.note = err.Error()
			return t
		}
		if err := syscall.Mount("tmpfs", state, "tmpfs", 0, "size=3g,mode=0700"); err != nil {
			t.note = "mount tmpfs: " + err.Error()
			return t
		}
		defer func() {
			// The evidence (store, logs, run directories without their
			// datadirs) outlives the tmpfs, for the keeping of a failed
			// trial (tmpfsSaved).
			saved := tmpfsSaved(state)
			if err := os.MkdirAll(saved, 0o700); err == nil {
				_ = exec.Command("sh", "-c", `tar -C "$1" --exclude=data --exclude='filler-*' --exclude=./builds --exclude=./datadirs -cf - . | tar -C "$2" -xf -`, "sh", state, saved).Run()
			}
			_ = syscall.Unmount(state, syscall.MNT_DETACH)
		}()
	}
	var env, extra []string
	t.at = 1 + rng.IntN(fx.total-2)
	if fault == "disk-full-prepare" {
		// Revisions are prepared in the first half of a session: a later
		// run has no preparation after it.
		t.at = 1 + rng.IntN(max(fx.total/2, 1))
	}
	switch fault {
	case "kill-at":
		point := faultpoint.Points[i%len(faultpoint.Points)]
		n, delay := 1, time.Duration(0)
		switch point {
		case "checkout":
			n = 1 + rng.IntN(20)
		case "configure":
			n, delay = 1+rng.IntN(2), time.Duration(rng.IntN(800))*time.Millisecond
		case "build":
			n, delay = 1+rng.IntN(4), time.Duration(rng.IntN(1500))*time.Millisecond
		case "install":
			n, delay = 1+rng.IntN(4), time.Duration(rng.IntN(300))*time.Millisecond
		case "datadir":
			n, delay = 1+rng.IntN(4), time.Duration(rng.IntN(4000))*time.Millisecond
		case "run":
			n, delay = 1+rng.IntN(fx.total-2), time.Duration(rng.IntN(1500))*time.Millisecond
		case "store-write":
			n = 1 + rng.IntN(fx.total)
		}
		t.at = n
		env = []string{fmt.Sprintf("PERFBISECT_FAULT=%s:%d:%s", point, n, delay)}
		t.note = fmt.Sprintf("%s:%d:%s", point, n, delay)
	case "port-taken":
		t.at = 1 + rng.IntN(fx.total)
		env = []string{fmt.Sprintf("PERFBISECT_FAULT=port-taken:%d", t.at)}
	case "server-hang":
		t.at = 1 + rng.IntN(fx.total)
		env = []string{fmt.Sprintf("PERFBISECT_FAULT=server-hang:%d", t.at)}
		extra = []string{"--start-timeout", "10s"}
	case "hung-build":
		// The endpoints are builds 1 and 2; the Nth build after them hangs.
		t.at = 3 + rng.IntN(2)
		// The trial's own count (beside its TMPDIR, whose files are
		// counted as left): a count shared by the trials of one suite
		// passed the drawn build in its first trial only.
		counter := tmp + ".builds"
		cmd := fmt.Sprintf(`n=$(($(cat %[1]s 2>/dev/null || echo 0) + 1)); echo $n > %[1]s; if [ $n = %[2]d ]; then sleep 3601; fi; `+
			`cmake -S "$SRC" -B "$BUILD_DIR" -DCMAKE_INSTALL_PREFIX="$PREFIX" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null && cmake --build "$BUILD_DIR" -j "$JOBS" && DESTDIR="$DESTDIR" cmake --install "$BUILD_DIR"`, counter, t.at)
		extra = []string{"--build-cmd", cmd, "--build-timeout", "30s"}
	}
	s, err := fx.start(state, tmp, env, fx.startArgs(state, extra...)...)
	if err != nil {
		t.note = err.Error()
		return t
	}
	var exitErr error
	var before []float64
	checksOK := true // the fault's own checks held (two-sessions: the second start refused; read-only: status works)
	switch fault {
	case "kill-at":
		exitErr = waitOrKill(s, 15*time.Minute)
		t.injected = killedBySIGKILL(exitErr)
		before = storedRuns(state)
		if t.injected {
			var out string
			out, exitErr = fx.resume(state, tmp)
			t.twice = max(len(liveRun.FindAllString(out, -1))-(len(storedRuns(state))-len(before)), 0)
			s.out = bytes.NewBufferString(out)
		} else {
			t.note += ": ended before the fault"
		}
	case "port-taken", "server-hang", "hung-build", "long-tmpdir":
		exitErr = waitOrKill(s, 15*time.Minute)
		out := s.out.String()
		switch fault {
		case "port-taken":
			t.injected = strings.Contains(out, "fault port-taken")
		case "server-hang":
			t.injected = strings.Contains(out, "fault server-hang")
			if t.injected && !strings.Contains(out, "not accepting connections after 10s") {
				t.note = "the hung start was not reported as such"
			}
		case "hung-build":
			t.injected = strings.Contains(out, "--build-timeout")
		default:
			t.injected = true
		}
	case "two-sessions":
		if !s.waitRuns(state, 1, &exitErr) {
			t.note = "ended before the fault"
			break
		}
		t.injected = true
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		second := exec.CommandContext(ctx, fx.bin, fx.startArgs(state)...)
		second.Env = append(os.Environ(), "TMPDIR="+tmp)
		b, err := second.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		pid := strconv.Itoa(s.cmd.Process.Pid)
		refused := err != nil && !timedOut && strings.Contains(string(b), "pid "+pid)
		if !refused {
			t.note = fmt.Sprintf("second start on the state directory: %v, want refused at once naming pid %s: %s", err, pid, lastLine(string(b)))
		}
		exitErr = waitOrKill(s, 15*time.Minute)
		checksOK = refused
	case "disk-full", "disk-full-prepare", "read-only":
		if !s.waitRuns(state, t.at, &exitErr) {
			t.note = "ended before the fault"
			break
		}
		if fault == "disk-full-prepare" {
			// The next datadir preparation: its initialisation or its load.
			load := rng.IntN(2) == 1
			if !s.waitPreparation(state, load, &exitErr) {
				t.note = "ended before the fault"
				break
			}
			time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
		}
		t.injected = true
		stop := make(chan struct{})
		var wg sync.WaitGroup
		if fault != "read-only" {
			wg.Add(1)
			go func() { defer wg.Done(); keepFull(state, stop) }()
		} else {
			// Linux refuses a read-only remount while a file is open for
			// writing (the store is): the disk goes read-only between an
			// interrupted session and its resume.
			_ = s.cmd.Process.Signal(syscall.SIGINT)
			if exitErr = waitOrKill(s, 2*time.Minute); exitCode(exitErr) != 130 {
				t.note = fmt.Sprintf("SIGINT: exit %v, want 130; ", exitErr)
			}
			time.Sleep(time.Second) // the server dies by its parent-death signal
			if err := syscall.Mount("tmpfs", state, "tmpfs", syscall.MS_REMOUNT|syscall.MS_RDONLY, "size=3g,mode=0700"); err != nil {
				t.note += "remount read-only: " + err.Error()
				break
			}
			// What the session stored still shows.
			if b, err := exec.Command(fx.bin, "status", "--state-dir", state).CombinedOutput(); err != nil || !strings.Contains(string(b), "unfinished") {
				t.note += fmt.Sprintf("status on the read-only disk: %v: %s; ", err, lastLine(string(b)))
				checksOK = false
			}
			var out string
			out, exitErr = fx.resume(state, tmp)
			s.out = bytes.NewBufferString(out)
		}
		if fault != "read-only" {
			exitErr = waitOrKill(s, 5*time.Minute)
		}
		close(stop)
		wg.Wait()
		out := s.out.String()
		want := "is full"
		if fault == "read-only" {
			want = "read-only file system"
			if err := syscall.Mount("tmpfs", state, "tmpfs", syscall.MS_REMOUNT, "size=3g,mode=0700"); err != nil {
				t.note += "remount writable: " + err.Error()
			}
		} else {
			fillers, _ := filepath.Glob(filepath.Join(state, "filler-*"))
			for _, f := range fillers {
				_ = os.Remove(f)
			}
		}
		if exitErr == nil && firstBad.MatchString(out) {
			t.injected, t.note = false, "ended before the disk filled"
			break
		}
		if exitCode(exitErr) != 1 || !strings.Contains(strings.ToLower(out), want) || strings.Contains(out, "panic:") {
			t.note += fmt.Sprintf("want exit 1 saying %q; got %v: %s", want, exitErr, lastLine(out))
			checksOK = false // a resumed session that ends well does not make up for a stop that did not say why
		}
		before = storedRuns(state)
		if bad := fx.blamed(state, ""); len(bad) > 0 {
			t.note += "; blamed while the disk was bad: " + strings.Join(bad, " ")
		}
		var rout string
		rout, exitErr = fx.resume(state, tmp)
		t.twice = max(len(liveRun.FindAllString(rout, -1))-(len(storedRuns(state))-len(before)), 0)
		s.out = bytes.NewBufferString(rout)
	default: // kill-perfbisect, the signals, kill-mysqld
		if !s.waitRuns(state, t.at, &exitErr) {
			t.note = "ended before the fault"
			break
		}
		t.injected = true
		before = storedRuns(state)
		switch fault {
		case "kill-perfbisect":
			_ = s.cmd.Process.Signal(syscall.SIGKILL)
		case "sigint":
			_ = s.cmd.Process.Signal(syscall.SIGINT)
		case "sigterm":
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
		case "sighup":
			_ = s.cmd.Process.Signal(syscall.SIGHUP)
		case "kill-mysqld":
			if !killServer(state, rng) {
				t.injected, t.note = false, "no server to kill in 60 s"
			}
		}
		if fault == "kill-mysqld" {
			exitErr = waitOrKill(s, 15*time.Minute)
			if t.injected && !strings.Contains(s.out.String(), "not the revision's fault") {
				t.note = "the killed run was not retried as the machine's"
			}
			break
		}
		exitErr = waitOrKill(s, 2*time.Minute)
		before = storedRuns(state)
		if fault != "kill-perfbisect" && exitCode(exitErr) != 130 {
			t.note = fmt.Sprintf("%s: exit %v, want 130", fault, exitErr)
		}
		time.Sleep(time.Second) // the server dies by its parent-death signal
		var out string
		out, exitErr = fx.resume(state, tmp)
		t.twice = max(len(liveRun.FindAllString(out, -1))-(len(storedRuns(state))-len(before)), 0)
		s.out = bytes.NewBufferString(out)
	}
	fx.judge(&t, state, tmp, s.out.String(), exitErr, before, sockets)
	t.survived = t.survived && checksOK
	if fault == "hung-build" && !t.survived && !t.wrong && exitCode(exitErr) == 4 && strings.Contains(s.out.String(), fmt.Sprintf("%.10s", fx.culprit)) {
		// Undecided between the culprit and the skipped (hung) revision next
		// to it: a right answer, not an exact one.
		t.survived, t.note = true, "a range holding the culprit and the hung revision"
	}
	return t
}

// neighbours runs one session of the fixture with a neighbour at random
// moments (internal/neighbour): throttle, a CPU quota of 0.4 CPU on the
// cgroup of perfbisect and its servers (on 1-3 s, off 2-8 s: about a
// third of the time); memory-hog, dd streaming 32 MB blocks in a cgroup of
// its own (on 1-3 s, off 3-10 s). The session must name the culprit; the
// trial counts the runs measured again (its cost) and at is the runs
// stored.
func (fx *fixture) neighbours(fault string, i int, state, tmp string, rng *rand.Rand) trial {
	t := trial{fault: fault}
	cg, err := neighbour.New(fmt.Sprintf("perfbisect-faults-%d-%s-%d", os.Getpid(), fault, i))
	if err != nil {
		t.note = err.Error()
		return t
	}
	defer cg.Remove()
	s, err := fx.start(state, tmp, nil, fx.startArgs(state)...)
	if err != nil {
		t.note = err.Error()
		return t
	}
	ctx, cancel := context.WithCancel(context.Background())
	var c *neighbour.Counter
	var wait func()
	addErr := error(nil)
	if fault == "throttle" {
		addErr = cg.Add(s.cmd.Process.Pid)
		c, wait = neighbour.Throttle(ctx, cg, 0.4, neighbour.Schedule{MinOff: 2 * time.Second, MaxOff: 8 * time.Second, MinOn: time.Second, MaxOn: 3 * time.Second}, rng.Uint64())
	} else {
		c, wait = neighbour.Hog(ctx, cg, neighbour.Schedule{MinOff: 3 * time.Second, MaxOff: 10 * time.Second, MinOn: time.Second, MaxOn: 3 * time.Second}, rng.Uint64())
	}
	exitErr := waitOrKill(s, 15*time.Minute)
	cancel()
	wait()
	visits, on := c.Visits()
	out := s.out.String()
	t.again = strings.Count(out, "measured again, not counted")
	t.at = len(storedRuns(state))
	t.injected = visits > 0 && addErr == nil
	t.note = fmt.Sprintf("%d visits, %s in all", visits, on.Round(time.Second))
	if addErr != nil {
		t.note = "perfbisect not moved into the throttled cgroup: " + addErr.Error()
	}
	fx.judge(&t, state, tmp, out, exitErr, nil, nil)
	return t
}

// keepFull fills the filesystem of dir and keeps it full (every 20 ms)
// until stop is closed.
func keepFull(dir string, stop chan struct{}) {
	for n := 0; ; n++ {
		var st syscall.Statfs_t
		if syscall.Statfs(dir, &st) == nil {
			if free := int64(st.Bavail) * st.Bsize; free > 64<<10 {
				if f, err := os.Create(filepath.Join(dir, fmt.Sprintf("filler-%d", n))); err == nil {
					_ = syscall.Fallocate(int(f.Fd()), 0, 0, free-32<<10)
					f.Close()
				}
			}
		}
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// twoDirs runs two sessions of the fixture at once on two state directories:
// both must name the culprit, and no run of one may overlap a run of the
// other in time (the machine-wide lock).
func (fx *fixture) twoDirs(state, tmp string, sockets map[string]bool) trial {
	t := trial{fault: "two-dirs", injected: true}
	a, b := state+"-a", state+"-b"
	defer os.RemoveAll(a)
	defer os.RemoveAll(b)
	sa, err1 := fx.start(a, tmp, nil, fx.startArgs(a)...)
	sb, err2 := fx.start(b, tmp, nil, fx.startArgs(b)...)
	if err1 != nil || err2 != nil {
		t.note = fmt.Sprint(err1, err2)
		return t
	}
	ea, eb := waitOrKill(sa, 20*time.Minute), waitOrKill(sb, 20*time.Minute)
	var ta, tb trial
	fx.judge(&ta, a, tmp, sa.out.String(), ea, nil, sockets)
	fx.judge(&tb, b, tmp, sb.out.String(), eb, nil, sockets)
	t.survived, t.wrong = ta.survived && tb.survived, ta.wrong || tb.wrong
	t.processes, t.tempFiles = ta.processes+tb.processes, ta.tempFiles+tb.tempFiles
	t.note = strings.Trim(ta.note+" "+tb.note, " ")
	wa, wb := runSpans(a), runSpans(b)
	overlaps := 0
	for _, x := range wa {
		for _, y := range wb {
			if x[0].Before(y[1]) && y[0].Before(x[1]) {
				overlaps++
			}
		}
	}
	t.at = len(wa) + len(wb)
	if overlaps > 0 || len(wa) == 0 || len(wb) == 0 {
		t.survived = false
		t.note = strings.TrimSpace(t.note + fmt.Sprintf(" %d overlapping runs of %d and %d", overlaps, len(wa), len(wb)))
	}
	return t
}

// runSpans returns [start, end] of every stored run of state's latest start
// session (the run's whole life: server start, warm-up, window, stop).
func runSpans(state string) [][2]time.Time {
	var out [][2]time.Time
	for _, r := range readRuns(state) {
		if !r.Started.IsZero() {
			out = append(out, [2]time.Time{r.Started, r.Started.Add(r.Wall)})
		}
	}
	return out
}

// corruptStore damages a copy of the reference session's store (truncated,
// a page of garbage, the header zeroed: in turn) and runs the commands that
// read it: none may panic, a failure must be one message naming the file,
// and the file must be left as it was.
func (fx *fixture) corruptStore(i int, state string, rng *rand.Rand) trial {
	t := trial{fault: "corrupt-store", injected: true, survived: true}
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.note, t.survived = err.Error(), false
		return t
	}
	db := filepath.Join(state, store.FileName)
	b, err := os.ReadFile(fx.refStore)
	if err != nil {
		t.note, t.survived = err.Error(), false
		return t
	}
	mode := []string{"truncated", "garbage page", "header zeroed"}[i%3]
	switch mode {
	case "truncated":
		t.at = rng.IntN(len(b))
		b = b[:t.at]
	case "garbage page":
		page := 4096
		t.at = page * (1 + rng.IntN(max(len(b)/page-1, 1)))
		for j := t.at; j < min(t.at+page, len(b)); j++ {
			b[j] = byte(rng.IntN(256))
		}
	case "header zeroed":
		clear(b[:min(100, len(b))])
	}
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.note, t.survived = err.Error(), false
		return t
	}
	sum := sha256.Sum256(b)
	var notes []string
	for _, args := range [][]string{{"status"}, {"log"}, {"report", "--format", "json"}, {"resume"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, fx.bin, append(args, "--state-dir", state)...)
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		o := string(out)
		switch {
		case strings.Contains(o, "panic:") || strings.Contains(o, "goroutine "):
			notes = append(notes, args[0]+" panicked")
		case exitCode(err) == 1 && !strings.Contains(o, store.FileName):
			notes = append(notes, fmt.Sprintf("%s failed without naming the store: %s", args[0], lastLine(o)))
		case exitCode(err) < 0 || exitCode(err) > 4 || timedOut:
			notes = append(notes, fmt.Sprintf("%s: %v", args[0], err))
		}
	}
	if after, err := os.ReadFile(db); err != nil || sha256.Sum256(after) != sum {
		notes = append(notes, "the store was changed")
	}
	t.survived = len(notes) == 0
	t.note = mode + ": " + strings.Join(notes, "; ")
	t.processes = len(processesUnder(state))
	return t
}

func openStore(state string) (*sql.DB, error) {
	path := filepath.Join(state, store.FileName)
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
}

// storedRun is what the suite reads of a stored run.
type storedRun struct {
	TPS     float64       `json:"tps"`
	Started time.Time     `json:"started"`
	Wall    time.Duration `json:"wall"`
}

// readRuns returns the runs the state directory's latest start session
// stored, in order, read with one read-only query (the probe must not itself
// disturb the windows it waits for).
func readRuns(state string) []storedRun {
	db, err := openStore(state)
	if err != nil {
		return nil
	}
	defer db.Close()
	rows, err := db.Query(`SELECT e.run FROM events e WHERE e.session = (SELECT max(id) FROM sessions WHERE kind = 'start') AND e.run != '' ORDER BY e.seq`)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []storedRun
	for rows.Next() {
		var run string
		var r storedRun
		if rows.Scan(&run) == nil && json.Unmarshal([]byte(run), &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// storedRuns returns the tps of readRuns.
func storedRuns(state string) []float64 {
	var tps []float64
	for _, r := range readRuns(state) {
		tps = append(tps, r.TPS)
	}
	return tps
}

// killServer sends SIGKILL to the mariadbd measured under state once one
// runs (within 60 s), a random 0-2 s after it is seen (its start, warm-up or
// window); false when none was killed. A server that ended before the kill
// (a short run lives about 1.5 s: half the kills came too late, and the
// trial counted as not injected) is not a kill: the next one is waited for.
func killServer(state string, rng *rand.Rand) bool {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range processesUnder(state) {
			if strings.Contains(p.cmdline, "mariadbd") && strings.Contains(p.cmdline, filepath.Join(state, "runs")) && !strings.Contains(p.cmdline, "--print-defaults") {
				time.Sleep(time.Duration(rng.IntN(2000)) * time.Millisecond)
				if syscall.Kill(p.pid, syscall.SIGKILL) == nil {
					return true
				}
				break // it ended: wait for the next
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

type proc struct {
	pid     int
	cmdline string
}

// processesUnder lists processes whose command line holds s.
func processesUnder(s string) []proc {
	var out []proc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if cl := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(cl, s) {
			out = append(out, proc{pid, cl})
		}
	}
	return out
}

// socketDirs lists perfbisect's socket directories under /tmp (where a
// TMPDIR too long for a socket path sends them).
func socketDirs() map[string]bool {
	out := map[string]bool{}
	dirs, _ := filepath.Glob(filepath.Join("/tmp", "pb[0-9]*"))
	for _, d := range dirs {
		out[d] = true
	}
	return out
}

// leftovers lists datadirs left under state/runs (a finished session keeps
// none; a failed run keeps its logs, not its datadir), anything left in the
// trial's TMPDIR, and, when before is not nil, socket directories under /tmp
// that were not there before the trial.
func leftovers(state, tmp string, before map[string]bool) []string {
	left, _ := filepath.Glob(filepath.Join(state, "runs", "*", "data"))
	ents, _ := os.ReadDir(tmp)
	for _, e := range ents {
		left = append(left, filepath.Join(tmp, e.Name()))
	}
	if before != nil {
		for d := range socketDirs() {
			if !before[d] {
				left = append(left, d)
			}
		}
	}
	return left
}

// waitOrKill waits for the session to exit, killing it after limit.
func waitOrKill(s *session, limit time.Duration) error {
	select {
	case err := <-s.exited:
		return err
	case <-time.After(limit):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("no exit in %s: killed", limit)
	}
}

func fixtureVar(repo, name string) string {
	b, _ := os.ReadFile(filepath.Join(repo, ".git", "perfbisect-fixture.env"))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+"="); ok {
			return v
		}
	}
	return ""
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// readDone counts the trials of each fault already in out: those that
// injected it (done) and all (tried).
func readDone(out string) (done, tried map[string]int, err error) {
	done, tried = map[string]int{}, map[string]int{}
	f, err := os.Open(out)
	if errors.Is(err, os.ErrNotExist) {
		return done, tried, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Split(sc.Text(), "\t"); len(fields) >= 10 {
			tried[fields[0]]++
			if fields[8] == "true" {
				done[fields[0]]++
			}
		}
	}
	return done, tried, sc.Err()
}

// printTable prints one row per fault from out.
func printTable(out string) error {
	b, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	type row struct{ trials, survived, lost, twice, wrong, procs, temps, notInjected, again int }
	rows := map[string]*row{}
	var notes []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(l, "\t")
		if len(f) < 8 {
			continue
		}
		r := rows[f[0]]
		if r == nil {
			r = &row{}
			rows[f[0]] = r
		}
		atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
		if len(f) > 9 && f[8] != "true" {
			r.notInjected++
			continue
		}
		r.trials++
		if f[2] == "true" {
			r.survived++
		}
		r.lost += atoi(f[3])
		r.twice += atoi(f[4])
		if f[5] == "true" {
			r.wrong++
		}
		r.procs += atoi(f[6])
		r.temps += atoi(f[7])
		if len(f) > 10 {
			r.again += atoi(f[10])
		}
		if len(f) > 9 && f[9] != "" && (f[2] != "true" || f[3] != "0" || f[4] != "0" || f[6] != "0" || f[7] != "0" || strings.Contains(f[9], "range")) {
			notes = append(notes, f[0]+" after "+f[1]+" runs: "+f[9])
		}
	}
	fmt.Printf("%-16s %6s %8s %9s %14s %6s %14s %9s %12s %14s\n", "fault", "trials", "survived", "runs lost", "measured twice", "wrong", "processes left", "temp left", "not injected", "measured again")
	for _, fault := range allFaults {
		if r := rows[fault]; r != nil {
			fmt.Printf("%-16s %6d %8d %9d %14d %6d %14d %9d %12d %14d\n", fault, r.trials, r.survived, r.lost, r.twice, r.wrong, r.procs, r.temps, r.notInjected, r.again)
		}
	}
	for _, n := range notes {
		fmt.Println("note:", n)
	}
	fmt.Printf("(%s, %s/%s)\n", out, runtime.GOOS, runtime.GOARCH)
	return nil
}
