package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
)

// firstBadLine is what git bisect writes into BISECT_LOG when it has named
// the first bad commit ("# first bad commit: [sha] subject"; with other
// terms "# first new commit: ...").
var firstBadLine = regexp.MustCompile(`^# first ([A-Za-z0-9_.-]+) commit: \[([0-9a-f]{40})\]`)

// gitBisection is what BISECT_LOG says of the git bisection of a repository.
type gitBisection struct {
	gitDir            string // "" when the repository is not on disk
	termBad, termGood string // BISECT_TERMS, or bad and good
	bisecting         bool   // BISECT_LOG exists
	good, bad         string // the first good and bad commits it marked (its endpoints)
	firstBad          string // the first bad commit git named; "" until it has
}

// readGitBisection reads BISECT_TERMS and BISECT_LOG of repo: the one
// reader of git's bisection files (readBisectState adds the refs).
func readGitBisection(repo *git.Repository) gitBisection {
	b := gitBisection{termBad: "bad", termGood: "good"}
	fs, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		return b
	}
	b.gitDir = fs.Filesystem().Root()
	if t, err := os.ReadFile(filepath.Join(b.gitDir, "BISECT_TERMS")); err == nil {
		if f := strings.Fields(string(t)); len(f) >= 2 {
			b.termBad, b.termGood = f[0], f[1]
		}
	}
	f, err := os.Open(filepath.Join(b.gitDir, "BISECT_LOG"))
	if err != nil {
		return b
	}
	defer f.Close()
	b.bisecting = true
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := firstBadLine.FindStringSubmatch(sc.Text()); m != nil && m[1] == b.termBad {
			b.firstBad = m[2]
		} else if m := logMark.FindStringSubmatch(sc.Text()); m != nil {
			switch {
			case m[1] == b.termBad && b.bad == "":
				b.bad = m[2]
			case m[1] == b.termGood && b.good == "":
				b.good = m[2]
			}
		}
	}
	return b
}

// endRunSession ends sess, an unfinished perfbisect run session (a call
// cannot know it is the last), once git's side says how the bisection ended:
// done (found) when BISECT_LOG names the first bad commit, with a document of
// the session's stored decisions and runs; abandoned (state reset) when
// BISECT_LOG is gone (git bisect reset) or is another bisection's (other
// endpoints) before perfbisect saw an end. It returns the session as
// stored afterwards (sess itself when nothing changed). Sessions of other
// kinds or states, or whose repository cannot be opened, are returned as
// they are.
func endRunSession(st *store.Store, sess *store.Session) (*store.Session, error) {
	if sess == nil || sess.Kind != store.KindRun || sess.State != store.Running {
		return sess, nil
	}
	id := sess.Identity()
	repo, err := git.PlainOpen(id.Repo())
	if err != nil {
		return sess, nil
	}
	gb := readGitBisection(repo)
	// BISECT_LOG of another bisection (other endpoints) means this one was
	// reset before its end was seen.
	ours := gb.bisecting && gb.good == sess.Good && gb.bad == sess.Bad
	switch {
	case ours && gb.firstBad != "":
		doc, err := runDocument(st, sess, repo, gb.firstBad, id.Metric())
		if err != nil {
			return sess, err
		}
		if err := st.End(sess.ID, store.Done, string(session.Found), doc); err != nil {
			return sess, err
		}
	case !ours:
		// What was measured stays shown: the decisions and runs stored.
		doc, err := runDocument(st, sess, repo, "", id.Metric())
		if err != nil {
			// A step that cannot be read must not keep the session from
			// ending: it ends with nothing shown.
			doc = report.Document{Good: sess.Good, Bad: sess.Bad, Tested: []report.TestedCommit{}, Steps: []report.StepDoc{}}
		}
		doc.Result, doc.FirstBad = "abandoned", nil
		doc.Why = "git bisect was reset before perfbisect saw its outcome (git bisect log, or perfbisect status before git bisect reset, records it); the decisions perfbisect run made are below"
		if err := st.End(sess.ID, store.Reset, "abandoned", doc); err != nil {
			return sess, err
		}
	default:
		return sess, nil
	}
	return st.Session(sess.ID)
}

// runDocument is the document of a finished perfbisect run session: git's
// first bad commit ("" when git named none) and the decisions and runs the
// session stored.
func runDocument(st *store.Store, sess *store.Session, repo *git.Repository, firstBad, metric string) (report.Document, error) {
	res := &session.Result{Outcome: session.Found, FirstBad: firstBad, Runs: map[string][]bisect.Run{},
		Verdicts: map[string]string{}, Skipped: map[string]string{},
		Why: "git bisect run named it (.git/BISECT_LOG) from perfbisect run's verdicts"}
	steps, err := st.Steps(sess.ID)
	if err != nil {
		return report.Document{}, err
	}
	for _, s := range steps {
		var x session.Step
		if err := json.Unmarshal(s.Evidence, &x); err != nil {
			return report.Document{}, fmt.Errorf("store %s: step %d: %w", st.Path(), s.Seq, err)
		}
		res.Steps = append(res.Steps, x)
		if x.Role == session.RoleMidpoint {
			res.Verdicts[x.Commit] = x.Verdict
			if x.Verdict == "skip" {
				res.Skipped[x.Commit] = x.Reason
			}
		}
	}
	events, err := st.Events(sess.ID)
	if err != nil {
		return report.Document{}, err
	}
	for _, e := range events {
		if e.Run != nil {
			res.Runs[e.Commit] = append(res.Runs[e.Commit], *e.Run)
			res.Measured++
		}
	}
	res.Verdicts[sess.Good], res.Verdicts[sess.Bad] = "good", "bad"
	if metric == "" {
		metric = string(session.TPS)
	}
	doc := report.NewDocument(res, session.Metric(metric), func(h string) string { return bisect.Subject(repo, h) })
	doc.Good, doc.Bad = sess.Good, sess.Bad
	return doc, nil
}
