// Command faults injects faults into real bisections of the fixture and prints
// what survived: for each fault, the trials, the sessions that ended with the
// right first bad commit, runs lost (stored before the fault, gone after),
// runs measured twice (the resume measured more runs than the store gained),
// wrong answers, servers and processes left, and temporary files left (under
// the state directory's runs/ and under TMPDIR).
//
//	go run ./scripts/faults [-trials N] [-faults LIST] [-out FILE]
//	go run ./scripts/faults -trials 5 -faults kill-perfbisect,sigint,kill-mysqld
//
// Faults (-faults, comma separated; default all):
//
//	kill-perfbisect  SIGKILL of perfbisect after a random number of stored
//	                 runs (1 to two fewer than an uninterrupted session of
//	                 the fixture stores, measured first: endpoints,
//	                 candidates, builds and datadir preparations in
//	                 between), then resume
//	sigint, sigterm, sighup
//	                 the signal to perfbisect after a random number of runs:
//	                 it must exit 130 and resume
//	kill-mysqld      SIGKILL of the measured mariadbd during a random run:
//	                 the run is measured again, never counted, and the
//	                 session goes on
//
// Each trial bisects a fresh state directory of one 8-commit fixture
// (scripts/make-fixture.sh -n 8 --culprit-pos 5 --broken-pos 3: a broken
// build, then its fix) with short runs. Trials append one line each to -out
// (default faults.tsv in the current directory), so an interrupted suite
// resumes where it stopped, and the table is printed from that file. It
// starts real servers and builds: run it alone on an idle machine; a trial
// takes 1-3 minutes.
package main

import (
	"bufio"
	"bytes"
	"context"
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
	"syscall"
	"time"

	"github.com/perfbisect/perfbisect/bisect/store"
	_ "modernc.org/sqlite" // the store's driver, read-only here
)

var allFaults = []string{"kill-perfbisect", "sigint", "sigterm", "sighup", "kill-mysqld"}

// trial is one injected fault and what it left.
type trial struct {
	fault     string
	at        int  // runs stored when the fault was injected
	survived  bool // the session ended with the culprit
	lost      int  // runs stored before the fault and gone after
	twice     int  // runs the resume measured beyond what the store gained
	wrong     bool // a first bad commit other than the culprit
	processes int  // servers or perfbisects of the trial still running
	tempFiles int  // datadirs left under the state directory's runs/, socket directories under TMPDIR
	injected  bool // the fault happened (the session had not ended before it)
	note      string
}

func main() {
	trials := flag.Int("trials", 3, "trials per fault")
	faults := flag.String("faults", strings.Join(allFaults, ","), "faults to inject (comma separated)")
	out := flag.String("out", "faults.tsv", "file the trials are appended to (resumable)")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()), "random seed of the injection points")
	flag.Parse()
	for _, f := range strings.Split(*faults, ",") {
		if !slices.Contains(allFaults, f) {
			fmt.Fprintf(os.Stderr, "faults: unknown fault %q (want %s)\n", f, strings.Join(allFaults, ", "))
			os.Exit(2)
		}
	}
	if err := run(strings.Split(*faults, ","), *trials, *out, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(1)
	}
}

func run(faults []string, trials int, out string, seed uint64) error {
	done, err := readDone(out)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "faults-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "perfbisect")
	if b, err := exec.Command("go", "build", "-o", bin, "./cmd/perfbisect").CombinedOutput(); err != nil {
		return fmt.Errorf("go build (run this in the repository's root): %v\n%s", err, b)
	}
	repo := filepath.Join(work, "server")
	if b, err := exec.Command("bash", "scripts/make-fixture.sh", "-q", "-n", "8", "--culprit-pos", "5", "--broken-pos", "3", repo).CombinedOutput(); err != nil {
		return fmt.Errorf("make-fixture.sh: %v\n%s", err, b)
	}
	culprit := fixtureVar(repo, "CULPRIT_SHA")
	rng := rand.New(rand.NewPCG(seed, 7))
	// An uninterrupted session first: how many runs a whole one stores, so
	// that every fault falls inside a session.
	ref := filepath.Join(work, "state-reference")
	b, err := exec.Command(bin, append([]string{"start", "--repo", repo, "--good", "good", "--bad", "bad", "--state-dir", ref, "--quiet"}, workload...)...).CombinedOutput()
	total := len(storedRuns(ref))
	if err != nil || total < 4 || !strings.Contains(string(b), culprit) {
		return fmt.Errorf("the uninterrupted session (%d runs): %v\n%s", total, err, b)
	}
	fmt.Fprintf(os.Stderr, "faults: an uninterrupted session stores %d runs; faults come after 1..%d\n", total, total-2)
	_ = os.RemoveAll(ref)
	f, err := os.OpenFile(out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, fault := range faults {
		for i := done[fault]; i < trials; i++ {
			at := 1 + rng.IntN(total-2)
			fmt.Fprintf(os.Stderr, "faults: %s, trial %d of %d, after %d runs\n", fault, i+1, trials, at)
			t := inject(bin, repo, culprit, fault, at, filepath.Join(work, fmt.Sprintf("state-%s-%d", fault, i)), rng)
			fmt.Fprintf(os.Stderr, "faults: %+v\n", t)
			fmt.Fprintf(f, "%s\t%d\t%v\t%d\t%d\t%v\t%d\t%d\t%v\t%s\n", t.fault, t.at, t.survived, t.lost, t.twice, t.wrong, t.processes, t.tempFiles, t.injected, t.note)
			done[fault]++
		}
	}
	return printTable(out)
}

// workload is every trial's: short runs, a table that does not fit the
// culprit's buffer pool.
var workload = []string{"--threads", "2", "--tables", "1", "--time", "1", "--warmup", "0.5", "--table-size", "100000", "--range-size", "1000", "--rand-type", "uniform"}

var liveRun = regexp.MustCompile(`(?m)^run [0-9a-f]{10}: [0-9.]+ tps`)

// inject runs one bisection with one fault and resumes it as needed.
func inject(bin, repo, culprit, fault string, at int, state string, rng *rand.Rand) trial {
	t := trial{fault: fault, at: at}
	socketsBefore := socketDirs()
	args := append([]string{"start", "--repo", repo, "--good", "good", "--bad", "bad", "--state-dir", state}, workload...)
	cmd := exec.Command(bin, args...)
	var first bytes.Buffer
	cmd.Stdout, cmd.Stderr = &first, &first
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		t.note = err.Error()
		return t
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var before []float64
	var exitErr error
	finished := false
	deadline := time.Now().Add(15 * time.Minute)
wait:
	for {
		select {
		case exitErr = <-exited:
			finished = true
			break wait
		case <-time.After(time.Second):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.note = "no progress in 15 minutes"
			<-exited
			return t
		}
		if before = storedRuns(state); len(before) >= at {
			break
		}
	}
	if !finished {
		t.injected = true
		switch fault {
		case "kill-perfbisect":
			_ = cmd.Process.Signal(syscall.SIGKILL)
		case "sigint":
			_ = cmd.Process.Signal(syscall.SIGINT)
		case "sigterm":
			_ = cmd.Process.Signal(syscall.SIGTERM)
		case "sighup":
			_ = cmd.Process.Signal(syscall.SIGHUP)
		case "kill-mysqld":
			if !killServer(state, rng) {
				t.injected, t.note = false, "no server to kill was seen in 60 s"
			}
		}
		if fault == "kill-mysqld" {
			exitErr = waitOrKill(cmd, exited, 15*time.Minute)
			if t.injected && !strings.Contains(first.String(), "not the revision's fault") {
				t.note = "the killed run was not retried as the machine's"
			}
		} else {
			exitErr = waitOrKill(cmd, exited, 2*time.Minute)
			before = storedRuns(state)
			var ee *exec.ExitError
			if fault != "kill-perfbisect" && (!errors.As(exitErr, &ee) || ee.ExitCode() != 130) {
				t.note = fmt.Sprintf("%s: exit %v, want 130", fault, exitErr)
			}
			time.Sleep(time.Second) // the server dies by its parent-death signal
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
			defer cancel()
			r := exec.CommandContext(ctx, bin, "resume", "--state-dir", state)
			var second bytes.Buffer
			r.Stdout, r.Stderr = &second, &second
			r.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
			exitErr = r.Run()
			after := storedRuns(state)
			live := len(liveRun.FindAllString(second.String(), -1))
			t.twice = max(live-(len(after)-len(before)), 0)
			first = second
		}
	} else {
		t.note = "ended before the fault"
	}
	after := storedRuns(state)
	for i := range before {
		if i >= len(after) || after[i] != before[i] {
			t.lost++
		}
	}
	out := first.String()
	m := regexp.MustCompile(`first bad commit: ([0-9a-f]{40})`).FindStringSubmatch(out)
	t.survived = exitErr == nil && m != nil && m[1] == culprit
	t.wrong = m != nil && m[1] != culprit
	if exitErr != nil && t.note == "" {
		t.note = fmt.Sprintf("exit %v: %s", exitErr, lastLine(out))
	}
	time.Sleep(time.Second)
	t.processes = len(processesUnder(state))
	t.tempFiles = leftovers(state, socketsBefore)
	_ = os.RemoveAll(state)
	return t
}

// storedRuns returns the tps of the runs the state directory's latest start
// session stored, in order, read with one read-only query (the probe must not
// itself disturb the windows it waits for).
func storedRuns(state string) []float64 {
	path := filepath.Join(state, store.FileName)
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil
	}
	defer db.Close()
	rows, err := db.Query(`SELECT e.run FROM events e WHERE e.session = (SELECT max(id) FROM sessions WHERE kind = 'start') AND e.run != '' ORDER BY e.seq`)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var tps []float64
	for rows.Next() {
		var run string
		var r struct {
			TPS float64 `json:"tps"`
		}
		if rows.Scan(&run) == nil && json.Unmarshal([]byte(run), &r) == nil {
			tps = append(tps, r.TPS)
		}
	}
	return tps
}

// killServer sends SIGKILL to the mariadbd measured under state once one
// runs (within 60 s), a random 0-2 s after it is seen (its start, warm-up or
// window); false when none was seen.
func killServer(state string, rng *rand.Rand) bool {
	for range 600 {
		for _, p := range processesUnder(state) {
			if strings.Contains(p.cmdline, "mariadbd") && strings.Contains(p.cmdline, filepath.Join(state, "runs")) && !strings.Contains(p.cmdline, "--print-defaults") {
				time.Sleep(time.Duration(rng.IntN(2000)) * time.Millisecond)
				return syscall.Kill(p.pid, syscall.SIGKILL) == nil
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

// processesUnder lists processes whose command line names state.
func processesUnder(state string) []proc {
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
		if cl := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(cl, state) {
			out = append(out, proc{pid, cl})
		}
	}
	return out
}

// socketDirs lists perfbisect's socket directories under TMPDIR.
func socketDirs() map[string]bool {
	out := map[string]bool{}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "pb[0-9]*"))
	for _, d := range dirs {
		out[d] = true
	}
	return out
}

// leftovers counts datadirs left under state/runs (a finished session keeps
// none; a failed run keeps its logs, not its datadir) and socket directories
// under TMPDIR that were not there before the trial.
func leftovers(state string, before map[string]bool) int {
	dirs, _ := filepath.Glob(filepath.Join(state, "runs", "*", "data"))
	n := len(dirs)
	for d := range socketDirs() {
		if !before[d] {
			n++
		}
	}
	return n
}

// waitOrKill waits for cmd to exit (its Wait result on exited), killing it
// after limit.
func waitOrKill(cmd *exec.Cmd, exited chan error, limit time.Duration) error {
	select {
	case err := <-exited:
		return err
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-exited
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

// readDone counts the trials of each fault already in out.
func readDone(out string) (map[string]int, error) {
	done := map[string]int{}
	f, err := os.Open(out)
	if errors.Is(err, os.ErrNotExist) {
		return done, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Split(sc.Text(), "\t"); len(fields) >= 10 {
			done[fields[0]]++
		}
	}
	return done, sc.Err()
}

// printTable prints one row per fault from out.
func printTable(out string) error {
	b, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	type row struct{ trials, survived, lost, twice, wrong, procs, temps, notInjected int }
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
		if len(f) > 9 && f[9] != "" {
			notes = append(notes, f[0]+" after "+f[1]+" runs: "+f[9])
		}
	}
	fmt.Printf("%-16s %6s %8s %9s %14s %6s %14s %9s %12s\n", "fault", "trials", "survived", "runs lost", "measured twice", "wrong", "processes left", "temp left", "not injected")
	for _, fault := range allFaults {
		if r := rows[fault]; r != nil {
			fmt.Printf("%-16s %6d %8d %9d %14d %6d %14d %9d %12d\n", fault, r.trials, r.survived, r.lost, r.twice, r.wrong, r.procs, r.temps, r.notInjected)
		}
	}
	for _, n := range notes {
		fmt.Println("note:", n)
	}
	fmt.Printf("(%s, %s/%s)\n", out, runtime.GOOS, runtime.GOARCH)
	return nil
}
