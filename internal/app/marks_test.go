package app

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/internal/usage"
)

// gitRepo makes a repository of n empty commits on main and returns it, its
// commits oldest first, and a git runner in it.
func gitRepo(t *testing.T, n int) (string, []string, func(args ...string) string) {
	t.Helper()
	repo := t.TempDir()
	g := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	g("init", "-q", "-b", "main")
	var shas []string
	for i := 0; i < n; i++ {
		g("commit", "-q", "--allow-empty", "-m", "c"+string(rune('0'+i)))
		shas = append(shas, g("rev-parse", "HEAD"))
	}
	return repo, shas, g
}

// TestMarkByHand: marks go into the latest bisection's events after what it
// stored, with the user's reason; wrong marks are usage errors naming the
// revision and nothing is stored; a finished bisection is reopened; a
// running one, a git bisect run session and one without a regression are
// refused.
func TestMarkByHand(t *testing.T) {
	repo, shas, _ := gitRepo(t, 9)
	dir := t.TempDir()
	if _, err := Mark(dir, []HandMark{{Rev: shas[4], Mark: bisect.Bad}}); !isUsage(err) || !strings.Contains(err.Error(), "no session") {
		t.Errorf("no store: %v", err)
	}
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := store.Identity{"repo": repo, "metric": "tps", "good": shas[0], "bad": shas[8]}
	sess, err := st.Begin(store.KindStart, []string{"start"}, repo, shas[0], shas[8], id)
	if err != nil {
		t.Fatal(err)
	}
	r := bisect.Run{Commit: shas[0], TPS: 100}
	if err := st.Append(sess.ID, 0, session.Event{Kind: session.EventRun, Commit: shas[0], Run: &r}); err != nil {
		t.Fatal(err)
	}
	res, err := Mark(dir, []HandMark{{Rev: shas[6], Mark: bisect.Bad, Reason: " the release notes "}, {Rev: "HEAD~6", Mark: bisect.Good}})
	if err != nil || res.Reopened || len(res.Marked) != 2 || res.Session.ID != sess.ID {
		t.Fatalf("marking the unfinished session: %+v %v", res, err)
	}
	events, _ := st.Events(sess.ID)
	if len(events) != 3 || events[1].Kind != session.EventMark || events[1].Commit != shas[6] || events[1].Mark != "bad" ||
		events[1].Reason != "the release notes" || events[2].Commit != shas[2] || events[2].Mark != "good" || events[2].Reason != "no reason given" {
		t.Fatalf("stored events %+v", events)
	}
	refused := func(what string, marks []HandMark, want ...string) {
		t.Helper()
		_, err := Mark(dir, marks)
		if !isUsage(err) {
			t.Errorf("%s: %v, want a usage error", what, err)
			return
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", what, err, w)
			}
		}
	}
	refused("good above a bad mark", []HandMark{{Rev: shas[7], Mark: bisect.Good}}, shas[7][:10], "contradicts", "bad "+shas[6][:10])
	refused("bad below a good mark", []HandMark{{Rev: shas[1], Mark: bisect.Bad}}, "contradicts", "good "+shas[2][:10])
	refused("an endpoint", []HandMark{{Rev: shas[8], Mark: bisect.Skip}}, "endpoint")
	refused("a revision that is not one", []HandMark{{Rev: "no-such-rev", Mark: bisect.Skip}}, "no-such-rev")
	refused("one good, one wrong: nothing stored", []HandMark{{Rev: shas[3], Mark: bisect.Skip}, {Rev: shas[0], Mark: bisect.Good}}, "endpoint")
	if ev, _ := st.Events(sess.ID); len(ev) != 3 {
		t.Errorf("a refused mark stored events: %d, want 3", len(ev))
	}
	// Marking a commit again replaces its mark.
	if _, err := Mark(dir, []HandMark{{Rev: shas[2], Mark: bisect.Skip}}); err != nil {
		t.Errorf("skip over an earlier good: %v", err)
	}
	// The same commit twice in one call is stored once; marked so again,
	// nothing is stored. A bad mark before 6 is now allowed: 2's good
	// mark was replaced by skip... and 6 stays bad.
	res, err = Mark(dir, []HandMark{{Rev: shas[5], Mark: bisect.Bad}, {Rev: shas[5], Mark: bisect.Bad}, {Rev: shas[6], Mark: bisect.Bad}})
	if err != nil || len(res.Marked) != 1 || res.Marked[0].Commit != shas[5] {
		t.Errorf("5 bad twice and 6 bad again: %+v %v, want one new mark", res, err)
	}
	if _, err := Mark(dir, []HandMark{{Rev: shas[1], Mark: bisect.Bad}}); err != nil {
		t.Errorf("bad on 1 after 2's good mark was replaced by skip: %v", err)
	}
	// A skip range marks the commits of A..B the session searches.
	res, err = Mark(dir, []HandMark{{Rev: shas[0] + ".." + shas[3], Mark: bisect.Skip, Reason: "build broken there"}})
	if err != nil || len(res.Marked) != 2 || res.Marked[0].Commit == shas[2] || res.Marked[1].Commit == shas[2] {
		t.Errorf("skip %.7s..%.7s: %+v %v, want 1 and 3 (2 is skip already)", shas[0], shas[3], res, err)
	}
	refused("a good range", []HandMark{{Rev: shas[1] + ".." + shas[3], Mark: bisect.Good}}, "skip only")
	unlock, err := measure.LockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	refused("while a perfbisect holds the state directory", []HandMark{{Rev: shas[3], Mark: bisect.Skip}}, "stop it first", "resume")
	unlock()

	// A finished session is reopened: running again, its steps gone (resume
	// decides them again).
	if err := st.AddStep(sess.ID, 0, session.Step{Role: session.RoleMidpoint, Commit: shas[4], Verdict: session.VerdictGood}); err != nil {
		t.Fatal(err)
	}
	if err := st.End(sess.ID, store.Done, "found", map[string]string{"why": "x"}); err != nil {
		t.Fatal(err)
	}
	res, err = Mark(dir, []HandMark{{Rev: shas[5], Mark: bisect.Good, Reason: "built by hand"}})
	if err != nil || !res.Reopened || res.Was != "found" {
		t.Fatalf("marking a finished session: %+v %v", res, err)
	}
	x, _ := st.Session(sess.ID)
	steps, _ := st.Steps(sess.ID)
	// status and log show the marks the session has not taken yet.
	stored, err := LoadLatest(st)
	if err != nil {
		t.Fatal(err)
	}
	var status, log strings.Builder
	stored.WriteStatus(&status, dir)
	stored.WriteLog(&log)
	for what, out := range map[string]string{"status": status.String(), "log": log.String()} {
		if !strings.Contains(out, "marked by hand: built by hand (taken when the session goes on)") || !strings.Contains(out, shas[6][:10]) {
			t.Errorf("%s does not show the pending hand marks:\n%s", what, out)
		}
	}
	if !strings.Contains(log.String(), "git bisect good "+shas[5]) {
		t.Errorf("log lacks the pending mark as a git bisect line:\n%s", log.String())
	}
	if res, err := Mark(dir, []HandMark{{Rev: shas[5], Mark: bisect.Good}}); err != nil || len(res.Marked) != 0 {
		t.Errorf("marked so again: %+v %v, want nothing new", res, err)
	}
	if cur, _ := st.Current(store.KindStart); cur == nil || cur.ID != sess.ID || x.State != store.Running || x.Outcome != "" || len(steps) != 0 {
		t.Errorf("reopened: %+v, %d steps, current %+v", x, len(steps), cur)
	}

	if err := st.End(sess.ID, store.Done, string(session.NoRegression), nil); err != nil {
		t.Fatal(err)
	}
	refused("no regression", []HandMark{{Rev: shas[3], Mark: bisect.Skip}}, "no regression")
	if _, err := st.Begin(store.KindRun, []string{"run"}, repo, shas[0], shas[8], id); err != nil {
		t.Fatal(err)
	}
	refused("a git bisect run session", []HandMark{{Rev: shas[3], Mark: bisect.Skip}}, "git bisect good")
}

func isUsage(err error) bool {
	return err != nil && (errors.Is(err, usage.Err) || OutcomeOf(err) == Usage)
}

// TestReadBisectLog reads what git bisect log writes (a real bisection of a
// repository) and what perfbisect log writes; wrong logs are usage errors
// naming the file and line.
func TestReadBisectLog(t *testing.T) {
	_, shas, g := gitRepo(t, 9)
	g("bisect", "start", shas[8], shas[0])
	g("bisect", "skip", shas[4])
	g("bisect", "good", shas[3])
	g("bisect", "bad", shas[6])
	text := g("bisect", "log")
	g("bisect", "reset")
	l, err := ReadBisectLog(strings.NewReader(text), "bisect.log")
	if err != nil {
		t.Fatal(err)
	}
	if l.Bad != shas[8] || l.Good != shas[0] || l.FirstParent || len(l.Marks) != 3 {
		t.Fatalf("git's log read as %+v\n%s", l, text)
	}
	for i, want := range []struct {
		sha  string
		mark bisect.Mark
	}{{shas[4], bisect.Skip}, {shas[3], bisect.Good}, {shas[6], bisect.Bad}} {
		m := l.Marks[i]
		if m.Rev != want.sha || m.Mark != want.mark || !strings.HasPrefix(m.Reason, "git bisect "+want.mark.String()+" in bisect.log line ") {
			t.Errorf("mark %d: %+v, want %s %.10s", i, m, want.mark, want.sha)
		}
	}
	// git keeps the start line's revisions as typed: the endpoints are
	// the hashes of the comments before it, not what HEAD is later.
	g("bisect", "start", "HEAD", "HEAD~8")
	g("bisect", "good", shas[2])
	text = g("bisect", "log")
	g("bisect", "reset")
	l, err = ReadBisectLog(strings.NewReader("\ufeff"+strings.ReplaceAll(text, "\n", "\r\n")), "crlf.log")
	if err != nil || l.Bad != shas[8] || l.Good != shas[0] || len(l.Marks) != 1 || l.Marks[0].Rev != shas[2] {
		t.Fatalf("git's log of start HEAD HEAD~8 (with a BOM and CRLF) read as %+v %v\n%s", l, err, text)
	}
	if l, err := ReadBisectLog(strings.NewReader("git bisect start 'v2' 'v1' '--'\n"), "x"); err != nil || l.Bad != "v2" {
		t.Errorf("a start line ending in -- with no paths: %+v %v", l, err)
	}
	// perfbisect log's format: quoted start arguments, --first-parent,
	// evidence as comments; old/new terms.
	l, err = ReadBisectLog(strings.NewReader("# perfbisect session 3\ngit bisect start '--first-parent' 'v2' 'v1'\n# good: [x] y\n#   n=6: like good\ngit bisect old abc\ngit bisect new def\n"), "p.log")
	if err != nil || l.Bad != "v2" || l.Good != "v1" || !l.FirstParent || len(l.Marks) != 2 || l.Marks[0].Mark != bisect.Good || l.Marks[1].Mark != bisect.Bad {
		t.Errorf("perfbisect's log: %+v %v", l, err)
	}
	// Endpoints given by good/bad lines after an empty start.
	l, err = ReadBisectLog(strings.NewReader("git bisect start\ngit bisect bad v2\ngit bisect good v1\ngit bisect good v1.5\n"), "x")
	if err != nil || l.Bad != "v2" || l.Good != "v1" || len(l.Marks) != 1 || l.Marks[0].Rev != "v1.5" {
		t.Errorf("empty start: %+v %v", l, err)
	}
	for _, c := range []struct{ log, want string }{
		{"git bisect start v2 v1 v0\n", "b.log:1: git bisect start names 2 good revisions"},
		{"\n\ngit bisect start v2 v1 -- sql/\n", "b.log:3: a path-limited bisection"},
		{"git bisect start --term-new=slow v2 v1\n", "custom terms"},
		{"git bisect start v2 v1\ngit bisect visualize\n", "b.log:2: git bisect visualize cannot be replayed"},
		{"git bisect start v2 v1\nrm -rf /\n", "b.log:2: \"rm -rf /\" is not a git bisect command"},
		{"git bisect start v2\n", "no good and bad revision"},
		{"git bisect start 'v2\n", "b.log:1:"},
	} {
		_, err := ReadBisectLog(strings.NewReader(c.log), "b.log")
		if !isUsage(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want a usage error with %q", c.log, err, c.want)
		}
	}
}

// TestOpenBisectLog: a log's symbolic endpoints become hashes of the
// repository, and the stored start command carries them, not the log.
func TestOpenBisectLog(t *testing.T) {
	repo, shas, _ := gitRepo(t, 5)
	name := filepath.Join(t.TempDir(), "b.log")
	if err := os.WriteFile(name, []byte("git bisect start --first-parent HEAD HEAD~4\ngit bisect skip HEAD~2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := OpenBisectLog(name, repo)
	if err != nil || l.Bad != shas[4] || l.Good != shas[0] {
		t.Fatalf("%+v %v, want the hashes of HEAD and HEAD~4", l, err)
	}
	got := strings.Join(l.StartArgs([]string{"--repo", repo, name, "--threads", "2"}, name, false), " ")
	want := "start --repo " + repo + " --threads 2 --good " + shas[0] + " --bad " + shas[4] + " --first-parent"
	if got != want {
		t.Errorf("stored command %q, want %q", got, want)
	}
	if _, err := OpenBisectLog(name+".missing", repo); !isUsage(err) || !strings.Contains(err.Error(), "git bisect log >") {
		t.Errorf("a missing log: %v", err)
	}
	// A log of another repository: named as the log's, not as --bad.
	other := filepath.Join(t.TempDir(), "other.log")
	if err := os.WriteFile(other, []byte("git bisect start 0123456789abcdef0123456789abcdef01234567 "+shas[0]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = OpenBisectLog(other, repo)
	if !isUsage(err) || !strings.Contains(err.Error(), "other.log: its bad commit 0123456789abcdef") || strings.Contains(err.Error(), "--bad") {
		t.Errorf("a log of another repository: %v", err)
	}
}

// TestMarkOnALeftOutCommit: in a bisection that left out the commits that
// change only documentation, a mark on one is the same mark on the commit
// whose server it builds; a skip of one, or good on one that builds good's
// server, stores nothing; bad on that one contradicts the endpoint.
func TestMarkOnALeftOutCommit(t *testing.T) {
	repo, _, g := gitRepo(t, 0)
	var shas []string
	for i, file := range []string{"sql/a.cc", "README.md", "sql/b.cc", "Docs/notes", "sql/c.cc"} {
		p := filepath.Join(repo, file)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(file), 0o644)
		g("add", "-A")
		g("commit", "-q", "-m", "c"+string(rune('0'+i)))
		shas = append(shas, g("rev-parse", "HEAD"))
	}
	dir := t.TempDir()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := store.Identity{"repo": repo, "metric": "tps", "doc-commits": "left out"}
	sess, err := st.Begin(store.KindStart, []string{"start"}, repo, shas[0], shas[4], id)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Mark(dir, []HandMark{{Rev: shas[3], Mark: bisect.Bad, Reason: "perf top"}})
	if err != nil || len(res.Marked) != 1 || res.Marked[0].Commit != shas[2] || !strings.Contains(res.Marked[0].Reason, "perf top (given for "+shas[3][:10]) {
		t.Fatalf("bad on the Docs/ commit: %+v %v, want bad on its parent %.10s", res, err, shas[2])
	}
	for _, m := range []HandMark{{Rev: shas[1], Mark: bisect.Good}, {Rev: shas[1], Mark: bisect.Skip}} {
		if res, err := Mark(dir, []HandMark{m}); err != nil || len(res.Marked) != 0 {
			t.Errorf("%s on %.10s (good's server): %+v %v, want nothing stored", m.Mark, m.Rev, res, err)
		}
	}
	// A skip is the same server's too: it cannot be built or run either.
	if res, err := Mark(dir, []HandMark{{Rev: shas[3], Mark: bisect.Skip}}); err != nil || len(res.Marked) != 1 || res.Marked[0].Commit != shas[2] {
		t.Errorf("skip on the Docs/ commit: %+v %v, want skip on %.10s", res, err, shas[2])
	}
	if _, err := Mark(dir, []HandMark{{Rev: shas[1], Mark: bisect.Bad}}); !isUsage(err) || !strings.Contains(err.Error(), "good endpoint's server") {
		t.Errorf("bad on a commit that builds good's server: %v", err)
	}
	if ev, _ := st.Events(sess.ID); len(ev) != 2 {
		t.Errorf("stored %d events, want the two marks", len(ev))
	}
}
