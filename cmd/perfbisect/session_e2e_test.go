package main

// End-to-end tests of the stored session (resume after SIGKILL, status, log,
// reset) and of git bisect run, with real builds and real servers.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/store"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

// smallRun measures the fixtures with the large culprit (its buffer pool
// does not hold the data: about -75%): half-second windows, which tell
// 800 tps from 200 in every run, so that the suite stays short.
var smallRun = []string{"--threads", "2", "--tables", "1", "--time", "0.5", "--warmup", "0.25",
	"--table-size", "100000", "--range-size", "1000", "--rand-type", "uniform"}

// storedRuns returns the runs stored for the state directory's latest start
// session (tps by event), or nil when there is none yet.
func storedRuns(t *testing.T, state string) (*store.Session, []float64) {
	t.Helper()
	x, runs := latestRuns(t, state)
	var tps []float64
	for _, r := range runs {
		tps = append(tps, r.TPS)
	}
	return x, tps
}

// latestRuns returns the state directory's latest start session and its
// runs in stored order (nil when there is none yet).
func latestRuns(t *testing.T, state string) (*store.Session, []*bisect.Run) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(state, store.FileName)); err != nil {
		return nil, nil
	}
	st, err := store.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	x, err := st.LatestOf(store.KindStart)
	if err != nil || x == nil {
		return nil, nil
	}
	evs, err := st.Events(x.ID)
	if err != nil {
		t.Fatal(err)
	}
	var runs []*bisect.Run
	for _, e := range evs {
		if e.Run != nil {
			runs = append(runs, e.Run)
		}
	}
	return x, runs
}

// waitFor polls cond until it holds; when cmd exits first, or after timeout
// (it kills cmd), it fails the test naming what it waited for.
func waitFor(t *testing.T, cmd *exec.Cmd, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no %s after %s", what, timeout)
		}
		if exited(cmd.Process.Pid) && !cond() {
			t.Fatalf("perfbisect exited before %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// exited says whether the child pid has ended (a zombie its parent has
// not waited for yet).
func exited(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(after, "Z") || strings.HasPrefix(after, "X")
}

var liveRun = regexp.MustCompile(`(?m)^run [0-9a-f]{10}: [0-9.]+ tps`)

// killAndResume runs the start command args (whose --state-dir is state) in the
// background and kills perfbisect with SIGKILL once the store holds killAfter
// runs. It checks that no server outlives the kill, that the store and status
// show an interrupted session, and that a different start is refused while it
// is unfinished; then it resumes the session and checks that the runs stored
// before the kill were used, not measured again (every live run line of the
// resume is a run the store gained). args must not hold --quiet (the live run
// lines are counted). It returns the resume's result.
func killAndResume(t *testing.T, repo, state string, args []string, killAfter int) result {
	t.Helper()
	cmd := command(t, args...)
	var first bytes.Buffer
	cmd.Stdout, cmd.Stderr = &first, &first
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var killedAt int
	waitFor(t, cmd, 6*time.Minute, fmt.Sprintf("%d stored runs", killAfter), func() bool {
		_, tps := storedRuns(t, state)
		killedAt = len(tps)
		return killedAt >= killAfter
	})
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	time.Sleep(time.Second) // the server dies by its parent-death signal
	if s := serversUnder(state); len(s) > 0 {
		t.Errorf("servers outlived a kill -9 of perfbisect: %v", s)
	}
	sess, before := storedRuns(t, state)
	if sess.State != store.Running || len(before) < killedAt {
		t.Fatalf("after kill: session %s with %d runs (saw %d)\n%s", sess.State, len(before), killedAt, tail(first.String(), 20))
	}
	st := perfbisect(t, nil, "status", "--state-dir", state, "--repo", repo)
	if st.code != 0 || !strings.Contains(st.stdout, "unfinished (interrupted") || !strings.Contains(st.stdout, "perfbisect resume --state-dir "+state) {
		t.Errorf("status of the interrupted session: exit %d", st.code)
	}

	// Another start while one is unfinished: refused, naming the difference.
	other := append(append([]string(nil), args...), "--threshold", "7")
	if r := perfbisect(t, nil, other...); r.code != exitUsage || !strings.Contains(r.stderr, "threshold") || !strings.Contains(r.stderr, "perfbisect reset") {
		t.Errorf("a different start over an unfinished session: exit %d", r.code)
	}

	// Resume: the stored runs are used, not measured again.
	r := perfbisect(t, nil, "resume", "--state-dir", state, "--repo", repo)
	sess, after := storedRuns(t, state)
	if sess.State != store.Done || sess.Outcome != "found" {
		t.Errorf("session after resume: %s %s", sess.State, sess.Outcome)
	}
	live := len(liveRun.FindAllString(r.stderr, -1))
	if live != len(after)-len(before) {
		t.Errorf("resumed session measured %d runs; the store grew from %d to %d", live, len(before), len(after))
	}
	if len(after) < len(before) || !reflect.DeepEqual(after[:len(before)], before) {
		t.Errorf("the runs stored before the kill changed on resume")
	}
	if !strings.Contains(r.stderr, "runs stored are used") {
		t.Errorf("resume did not say it reuses stored runs")
	}
	return r
}

func TestResumeAfterSIGKILLReusesStoredRuns(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	// 4 commits: the kill and the resume need one midpoint after the
	// endpoints, not a long search.
	repo, culprit := makeFixture(t, "-n", "4", "--culprit-pos", "3", "--broken-pos", "0")
	state := t.TempDir()
	args := append([]string{"start", "--repo", repo, "--good", "good", "--bad", "bad", "--state-dir", state}, smallRun...)
	// The endpoints take 12 runs at the default --repeats: 16 is part-way
	// through the first midpoint.
	r := killAndResume(t, repo, state, args, 16)
	if r.code != exitOK || !strings.Contains(r.stdout, "first bad commit: "+culprit) {
		t.Fatalf("resumed session: exit %d, want 0 naming %s", r.code, culprit)
	}
	checkFinishedSession(t, repo, state, culprit, 0)
	rep := perfbisect(t, nil, "report", "--state-dir", state, "--repo", repo, "--format", "json")
	out := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(out, []byte(rep.stdout), 0o644); rep.code != exitOK || err != nil {
		t.Fatalf("report --format json: exit %d %v\n%s", rep.code, err, rep.stderr)
	}
	j := readJSON(t, out)
	checkMissesExplainTheCulprit(t, j)
	// The culprit's parent changes only Docs/ChangeLog.md: it is left out
	// of the search (never tested), good as the server it builds is its
	// parent's; git bisect replay of the log (above) reached the culprit
	// through it.
	parent := gitOut(t, repo, "rev-parse", culprit+"^")
	if len(j.LeftOut) != 1 || j.LeftOut[0].Commit != parent || j.LeftOut[0].Verdict != "good" {
		t.Errorf("left out: %+v, want the culprit's parent %.10s (a ChangeLog commit), good", j.LeftOut, parent)
	}
	for _, tc := range j.Tested {
		if tc.Commit == parent {
			t.Errorf("the left-out commit %.10s was tested", parent)
		}
	}
}

// checkFinishedSession checks what a finished session that found culprit
// leaves: status, a log that git bisect replay follows to the same commit, and
// reset with nothing to end. buildFailures is how many builds status must count
// as failed.
func checkFinishedSession(t *testing.T, repo, state, culprit string, buildFailures int) {
	t.Helper()
	st := perfbisect(t, nil, "status", "--state-dir", state, "--repo", repo)
	if !strings.Contains(st.stdout, "done (found)") || !strings.Contains(st.stdout, "first bad commit: "+culprit) ||
		!regexp.MustCompile(fmt.Sprintf(`builds: [0-9]+ \(%d failed`, buildFailures)).MatchString(st.stdout) {
		t.Errorf("status after the end (want %d failed build(s)):\n%s", buildFailures, st.stdout)
	}
	lg := perfbisect(t, nil, "log", "--state-dir", state, "--repo", repo)
	logFile := filepath.Join(t.TempDir(), "bisect.log")
	if err := os.WriteFile(logFile, []byte(lg.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	replay := exec.Command("git", "bisect", "replay", logFile)
	replay.Dir = repo
	out, err := replay.CombinedOutput()
	if err != nil || !strings.Contains(string(out), culprit+" is the first bad commit") {
		t.Errorf("git bisect replay of perfbisect log: %v\n%s\n--- log\n%s", err, out, lg.stdout)
	}
	// git ends there, not only passes it: its bad mark is the culprit.
	if b := gitOut(t, repo, "rev-parse", "refs/bisect/bad"); b != culprit {
		t.Errorf("after git bisect replay of perfbisect log, git's bad is %.10s, not the culprit %.10s:\n%s", b, culprit, lg.stdout)
	}
	reset := exec.Command("git", "bisect", "reset")
	reset.Dir = repo
	_ = reset.Run()
	if rs := perfbisect(t, nil, "reset", "--state-dir", state, "--repo", repo); rs.code != 0 || !strings.Contains(rs.stdout, "no unfinished session") {
		t.Errorf("reset after the end: exit %d", rs.code)
	}
}

// TestHandMarksReplayAndReset: a bisection begun from a git bisect log
// (perfbisect replay) takes the log's later marks by hand; interrupted, it
// gets one more mark by hand, and the resumed session names the culprit
// from the hand marks without building or running the commits they mark;
// status, log and the JSON report show the marks with their reasons. Marked
// again after it ended, the session is reopened; reset ends it, resume then
// has nothing to continue, and a different session may start.
func TestHandMarksReplayAndReset(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	repo, culprit := makeFixture(t, "-n", "4", "--culprit-pos", "3", "--broken-pos", "0")
	parent := gitOut(t, repo, "rev-parse", culprit+"^")
	good, bad := gitOut(t, repo, "rev-parse", "good"), gitOut(t, repo, "rev-parse", "bad")
	state := t.TempDir()
	logFile := filepath.Join(t.TempDir(), "bisect.log")
	text := fmt.Sprintf("# bisected by hand so far\ngit bisect start '%s' '%s'\ngit bisect good %s\n", bad, good, parent)
	if err := os.WriteFile(logFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// --keep-doc-commits: the culprit's parent here changes only a
	// ChangeLog, and the marks by hand are this test's subject (a mark on a
	// left-out commit: TestMarkOnALeftOutCommit).
	args := append([]string{"replay", "--repo", repo, "--state-dir", state, "--keep-doc-commits"}, smallRun...)
	cmd := command(t, append(args, logFile)...)
	var first bytes.Buffer
	cmd.Stdout, cmd.Stderr = &first, &first
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, cmd, 3*time.Minute, "a stored run", func() bool { _, tps := storedRuns(t, state); return len(tps) >= 1 })
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if !strings.Contains(first.String(), parent[:10]+" marked good by hand: git bisect good in "+logFile+" line 3") {
		t.Errorf("replay did not say it took the log's mark:\n%s", tail(first.String(), 20))
	}
	if r := perfbisect(t, nil, "mark", "good", good, "--state-dir", state); r.code != exitUsage || !strings.Contains(r.stderr, "endpoint") {
		t.Errorf("mark of the good endpoint: exit %d\n%s", r.code, r.stderr)
	}
	m := perfbisect(t, nil, "mark", "bad", culprit, "--reason", "perf record shows the new path", "--state-dir", state)
	if m.code != exitOK || !strings.Contains(m.stdout, culprit[:10]+" marked bad by hand (perf record shows the new path)") ||
		!strings.Contains(m.stdout, "perfbisect resume --state-dir "+state) {
		t.Fatalf("mark: exit %d\n%s%s", m.code, m.stdout, m.stderr)
	}

	r := perfbisect(t, nil, "resume", "--state-dir", state)
	if r.code != exitOK || !strings.Contains(r.stdout, "first bad commit: "+culprit) {
		t.Fatalf("resumed session: exit %d, want 0 naming %s\n%s\n%s", r.code, culprit, r.stdout, tail(r.stderr, 30))
	}
	st, err := store.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	builds, _ := st.Builds(1)
	st.Close()
	for _, b := range builds {
		if b.Commit != good && b.Commit != bad {
			t.Errorf("%.10s was built, but only the endpoints need a build (the rest is marked by hand)", b.Commit)
		}
	}
	if s, _ := storedRuns(t, state); s == nil || s.Args[0] != "start" || !strings.Contains(strings.Join(s.Args, " "), "--good "+good) {
		t.Errorf("the replayed session's stored command is not the start it stands for: %+v", s)
	}
	status := perfbisect(t, nil, "status", "--state-dir", state)
	lg := perfbisect(t, nil, "log", "--state-dir", state)
	for what, out := range map[string]string{"status": status.stdout, "log": lg.stdout} {
		if !strings.Contains(out, "marked by hand: perf record shows the new path") || !strings.Contains(out, "marked by hand: git bisect good in") {
			t.Errorf("%s does not show the hand marks:\n%s", what, out)
		}
	}
	if !strings.Contains(lg.stdout, "git bisect bad "+culprit) || !strings.Contains(lg.stdout, "git bisect good "+parent) {
		t.Errorf("log lacks the hand marks as git bisect lines:\n%s", lg.stdout)
	}
	rep := perfbisect(t, nil, "report", "--state-dir", state, "--format", "json")
	var doc struct {
		Tested []struct {
			Commit, Verdict, Hand string
			Runs                  []json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(rep.stdout), &doc); err != nil {
		t.Fatalf("report --format json: %v\n%s", err, rep.stderr)
	}
	hand := map[string]string{}
	for _, tc := range doc.Tested {
		if tc.Hand != "" {
			hand[tc.Commit] = tc.Verdict + ": " + tc.Hand
			if len(tc.Runs) != 0 {
				t.Errorf("%.10s, marked by hand, has %d runs", tc.Commit, len(tc.Runs))
			}
		}
	}
	if hand[culprit] != "bad: perf record shows the new path" || !strings.HasPrefix(hand[parent], "good: git bisect good in") {
		t.Errorf("the report's hand marks: %v", hand)
	}

	// Marked again after the end: reopened; reset ends it.
	if m := perfbisect(t, nil, "mark", "skip", culprit, "--state-dir", state); m.code != exitOK || !strings.Contains(m.stdout, "had ended (found): it is reopened") {
		t.Errorf("mark after the end: exit %d\n%s%s", m.code, m.stdout, m.stderr)
	}
	if r := perfbisect(t, nil, "reset", "--state-dir", state, "--repo", repo); r.code != 0 || !strings.Contains(r.stdout, "session 1 ended") {
		t.Fatalf("reset: exit %d", r.code)
	}
	if s, _ := storedRuns(t, state); s == nil || s.State != store.Reset {
		t.Errorf("session after reset: %+v", s)
	}
	if r := perfbisect(t, nil, "resume", "--state-dir", state, "--repo", repo); r.code != exitUsage || !strings.Contains(r.stderr, "no unfinished session") {
		t.Errorf("resume after reset: exit %d", r.code)
	}
	// A different session may start now (and is killed at once: only its
	// acceptance matters here).
	other := append([]string{"start", "--repo", repo, "--good", "good", "--bad", "bad", "--state-dir", state, "--threshold", "7"}, smallRun...)
	cmd = command(t, other...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, cmd, time.Minute, "the new session stored after a reset", func() bool { s, _ := storedRuns(t, state); return s != nil && s.ID == 2 })
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
}

// gitOut runs git in repo and returns its trimmed output.
func gitOut(t *testing.T, repo string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func TestGitBisectRunFindsTheCulprit(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	repo, culprit := makeFixture(t, "-n", "5", "--culprit-pos", "3", "--broken-pos", "0")
	state := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	headBefore := git("rev-parse", "HEAD")
	statusBefore := git("status", "--porcelain", "--ignored")
	// perfbisect run outside a bisection: a usage error that stops git (>= 128).
	if r := perfbisect(t, nil, append([]string{"run", "--repo", repo, "--state-dir", state}, smallRun...)...); r.code != runUsage || !strings.Contains(r.stderr, "git bisect start") {
		t.Errorf("run outside a bisection: exit %d, want %d", r.code, runUsage)
	}
	git("bisect", "start", "bad", "good")
	cmd := exec.Command("git", append([]string{"bisect", "run", binary, "run", "--state-dir", state}, smallRun...)...)
	cmd.Dir = repo
	out, err := cmd.CombinedOutput()
	t.Logf("git bisect run:\n%s", tail(string(out), 40))
	if err != nil {
		t.Fatalf("git bisect run: %v", err)
	}
	if !strings.Contains(string(out), culprit+" is the first bad commit") {
		t.Errorf("git bisect run did not end at the culprit %s", culprit)
	}
	// The endpoints were measured once, by the first call.
	calls := len(regexp.MustCompile(`perfbisect run: [0-9a-f]{10} is (good|bad|skip)`).FindAllString(string(out), -1))
	if n := strings.Count(string(out), "measured by an earlier call"); calls < 2 || n != calls-1 {
		t.Errorf("endpoints reused by %d later calls of %d, want every later call", n, calls)
	}
	// git named the culprit: the run session ends, as status and report show.
	st := perfbisect(t, nil, "status", "--state-dir", state)
	if !strings.Contains(st.stdout, "done (found)") || !strings.Contains(st.stdout, "first bad commit: "+culprit) {
		t.Errorf("status after git bisect run:\n%s", st.stdout)
	}
	if rep := perfbisect(t, nil, "report", "--state-dir", state, "--format", "json"); !strings.Contains(rep.stdout, `"first_bad":"`+culprit+`"`) {
		t.Errorf("report after git bisect run: exit %d\n%s", rep.code, tail(rep.stdout, 5))
	}
	git("bisect", "reset")
	if git("rev-parse", "HEAD") != headBefore || git("status", "--porcelain", "--ignored") != statusBefore {
		t.Errorf("the work tree changed: perfbisect must build outside it")
	}
	if s := serversUnder(state); len(s) > 0 {
		t.Errorf("servers left running: %v", s)
	}
}

// --first-parent blames the merge that brought a side branch's culprit in, as
// git bisect --first-parent does; --jobs 2 places two commits per round.
func TestFirstParentKaryBlamesTheMerge(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	repo, culprit := makeFixture(t, "-n", "10", "--merges", "--culprit-on-branch", "--fork-pos", "3", "--merge-pos", "7",
		"--branch-commits", "3", "--broken-pos", "0")
	merge := fixtureVar(t, repo, "MERGE_SHA")
	if merge == "" || merge == culprit {
		t.Fatalf("fixture: merge %q, culprit %s", merge, culprit)
	}
	state := t.TempDir()
	out := filepath.Join(t.TempDir(), "result.json")
	r := perfbisect(t, nil, append([]string{"start", "--repo", repo, "--good", "good", "--bad", "bad", "--first-parent", "--jobs", "2",
		"--state-dir", state, "--json", out, "--no-explain", "--no-confirm"}, smallRun...)...)
	if r.code != exitOK {
		t.Fatalf("exit %d, want 0", r.code)
	}
	j := readJSON(t, out)
	if j.FirstBad == nil || *j.FirstBad != merge {
		t.Errorf("first_bad %v, want the merge %s (the culprit %s is on the side branch)", j.FirstBad, merge, culprit)
	}
	for _, tc := range j.Tested {
		if tc.Commit == culprit {
			t.Errorf("the side branch's %s was tested in first-parent mode", culprit)
		}
	}
	lg := perfbisect(t, nil, "log", "--state-dir", state)
	if !strings.Contains(lg.stdout, "git bisect start '--first-parent' ") {
		t.Errorf("the log does not keep --first-parent")
	}
}
