package app

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
)

// BisectState is what git bisect keeps in the repository: its terms, its
// current bad, the marked good commits, and the first bad and good it was
// started with (from BISECT_LOG).
type BisectState struct {
	TermBad, TermGood string
	Bad               string   // refs/bisect/<bad>
	Goods             []string // refs/bisect/<good>-*
	FirstBad          string   // the first "# bad: [sha]" of BISECT_LOG
	FirstGood         string   // the first "# good: [sha]" of BISECT_LOG
}

// logMark is a mark in BISECT_LOG ("# bad: [sha] subject").
var logMark = regexp.MustCompile(`^# ([A-Za-z0-9_.-]+): \[([0-9a-f]{40})\]`)

// ReadBisectState reads git's bisection in r: its terms and first endpoints
// (ReadGitBisection) and the refs it keeps under refs/bisect/. Errors (usage):
// git is not bisecting with a bad and a good commit.
func ReadBisectState(r *git.Repository) (*BisectState, error) {
	gb := ReadGitBisection(r)
	st := &BisectState{TermBad: gb.TermBad, TermGood: gb.TermGood, FirstBad: gb.Bad, FirstGood: gb.Good}
	refs, err := r.References()
	if err != nil {
		return nil, err
	}
	_ = refs.ForEach(func(ref *plumbing.Reference) error {
		name := ref.Name().String()
		switch {
		case name == "refs/bisect/"+st.TermBad:
			st.Bad = ref.Hash().String()
		case strings.HasPrefix(name, "refs/bisect/"+st.TermGood+"-"):
			st.Goods = append(st.Goods, ref.Hash().String())
		}
		return nil
	})
	sort.Strings(st.Goods)
	if st.Bad == "" || len(st.Goods) == 0 {
		return nil, bisect.Usagef("not bisecting with a %s and a %s commit in %s (no refs/bisect/%s or refs/bisect/%s-*): run git bisect start BAD GOOD first, then git bisect run perfbisect run ...",
			st.TermBad, st.TermGood, gb.GitDir, st.TermBad, st.TermGood)
	}
	return st, nil
}

// Endpoints picks the references the candidate is placed between: the commits
// the bisection was started with (the whole good-bad shift, and builds that
// every step shares), or, without a BISECT_LOG, the current bad and the newest
// good.
func (b *BisectState) Endpoints(r *git.Repository) (good, bad string) {
	good, bad = b.FirstGood, b.FirstBad
	if bad == "" {
		bad = b.Bad
	}
	if good == "" {
		var newest *object.Commit
		for _, g := range b.Goods {
			if c, err := r.CommitObject(plumbing.NewHash(g)); err == nil && (newest == nil || c.Committer.When.After(newest.Committer.When)) {
				newest = c
			}
		}
		if newest != nil {
			good = newest.Hash.String()
		}
	}
	return good, bad
}

// firstBadLine is what git bisect writes into BISECT_LOG when it has named
// the first bad commit ("# first bad commit: [sha] subject"; with other
// terms "# first new commit: ...").
var firstBadLine = regexp.MustCompile(`^# first ([A-Za-z0-9_.-]+) commit: \[([0-9a-f]{40})\]`)

// GitBisection is what BISECT_LOG says of the git bisection of a repository.
type GitBisection struct {
	GitDir            string // "" when the repository is not on disk
	TermBad, TermGood string // BISECT_TERMS, or bad and good
	Bisecting         bool   // BISECT_LOG exists
	Good, Bad         string // the first good and bad commits it marked (its endpoints)
	FirstBad          string // the first bad commit git named; "" until it has
}

// ReadGitBisection reads BISECT_TERMS and BISECT_LOG of repo: the one
// reader of git's bisection files (ReadBisectState adds the refs).
func ReadGitBisection(repo *git.Repository) GitBisection {
	b := GitBisection{TermBad: "bad", TermGood: "good"}
	if b.GitDir = bisect.GitDir(repo); b.GitDir == "" {
		return b
	}
	if t, err := os.ReadFile(filepath.Join(b.GitDir, "BISECT_TERMS")); err == nil {
		if f := strings.Fields(string(t)); len(f) >= 2 {
			b.TermBad, b.TermGood = f[0], f[1]
		}
	}
	f, err := os.Open(filepath.Join(b.GitDir, "BISECT_LOG"))
	if err != nil {
		return b
	}
	defer f.Close()
	b.Bisecting = true
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := firstBadLine.FindStringSubmatch(sc.Text()); m != nil && m[1] == b.TermBad {
			b.FirstBad = m[2]
		} else if m := logMark.FindStringSubmatch(sc.Text()); m != nil {
			switch {
			case m[1] == b.TermBad && b.Bad == "":
				b.Bad = m[2]
			case m[1] == b.TermGood && b.Good == "":
				b.Good = m[2]
			}
		}
	}
	return b
}

// EndRunSession ends sess, an unfinished perfbisect run session (a call
// cannot know it is the last), once git's side says how the bisection ended:
// done (found) when BISECT_LOG names the first bad commit, with a document of
// the session's stored decisions and runs; abandoned (state reset) when
// BISECT_LOG is gone (git bisect reset) or is another bisection's (other
// endpoints) before perfbisect saw an end. It returns the session as
// stored afterwards (sess itself when nothing changed). Sessions of other
// kinds or states, or whose repository cannot be opened, are returned as
// they are.
func EndRunSession(st *store.Store, sess *store.Session) (*store.Session, error) {
	if sess == nil || sess.Kind != store.KindRun || sess.State != store.Running {
		return sess, nil
	}
	id := sess.Identity()
	repo, err := git.PlainOpen(id.Repo())
	if err != nil {
		return sess, nil
	}
	gb := ReadGitBisection(repo)
	// BISECT_LOG of another bisection (other Endpoints) means this one was
	// reset before its end was seen.
	ours := gb.Bisecting && gb.Good == sess.Good && gb.Bad == sess.Bad
	switch {
	case ours && gb.FirstBad != "":
		doc, err := RunDocument(st, sess, repo, gb.FirstBad, id.Metric())
		if err != nil {
			return sess, err
		}
		if err := st.End(sess.ID, store.Done, string(session.Found), doc); err != nil {
			return sess, err
		}
	case !ours:
		// What was measured stays shown: the decisions and runs stored.
		doc, err := RunDocument(st, sess, repo, "", id.Metric())
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

// RunDocument is the document of a finished perfbisect run session: git's
// first bad commit ("" when git named none) and the decisions and runs the
// session stored.
func RunDocument(st *store.Store, sess *store.Session, repo *git.Repository, FirstBad, metric string) (report.Document, error) {
	res := &session.Result{Outcome: session.Found, FirstBad: FirstBad, Runs: map[string][]bisect.Run{},
		Verdicts: map[string]string{}, Skipped: map[string]string{},
		Why: "git bisect run named it (.git/BISECT_LOG) from perfbisect run's verdicts"}
	steps, err := st.Decisions(sess.ID)
	if err != nil {
		return report.Document{}, err
	}
	for _, x := range steps {
		res.Steps = append(res.Steps, x)
		if x.Role == session.RoleMidpoint {
			res.Verdicts[x.Commit] = string(x.Verdict)
			if x.Verdict == session.VerdictSkip {
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
	doc.Good, doc.Bad, doc.Workload = sess.Good, sess.Bad, sess.Workload
	return doc, nil
}
