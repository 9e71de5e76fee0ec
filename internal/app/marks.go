package app

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	git "github.com/go-git/go-git/v5"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
)

// HandMark is a verdict given by hand, as git bisect good/bad/skip gives
// one: the revision as the user typed it (anything bisect.Resolve takes),
// the verdict and the user's reason. It enters the search as a certain
// observation: no run is taken of the commit, and runs taken before do not
// count against it.
type HandMark struct {
	Rev    string
	Mark   bisect.Mark // Good, Bad or Skip
	Reason string
}

// MarkResult is what Mark did: the session marked, the marks as stored
// (full hashes; none when every commit was marked so already), and whether
// the session had ended and was reopened.
type MarkResult struct {
	Session  *store.Session
	Marked   []session.Marked
	Reopened bool
	Was      string // the outcome the session had when it was reopened
}

// Mark adds hand marks to the latest bisection (perfbisect start) of the
// state directory dir: its unfinished session, or its finished one, which
// is reopened (a found culprit the user disagrees with, a range the user can
// settle). The marks are stored among its events; resume applies them at
// the point the session has reached. Errors (usage): no store or no
// bisection in dir; a perfbisect works on it now (stop it first: nothing
// measured is lost); the latest bisection is a git bisect run session (git
// bisect good/bad/skip marks those), was reset, failed, or found no
// regression (there is no search to mark); a revision that does not
// resolve, is not a commit the session searches (good, bad, or outside the
// range), or contradicts the session's other hand marks. Failures: the
// store's.
func Mark(dir string, marks []HandMark) (*MarkResult, error) {
	if _, err := os.Stat(filepath.Join(dir, store.FileName)); err != nil {
		return nil, bisect.Usagef("no session in %s (perfbisect start begins one, perfbisect replay LOG one from a git bisect log)", dir)
	}
	st, done, err := lockedStore(dir, "stop it first: Ctrl-C, nothing measured is lost; mark, then perfbisect resume")
	if err != nil {
		return nil, err
	}
	defer done()
	sess, err := st.LatestOf(store.KindStart, store.KindRun)
	if err != nil {
		return nil, With(Failure, err)
	}
	switch {
	case sess == nil:
		return nil, bisect.Usagef("no bisection in %s (perfbisect start begins one, perfbisect replay LOG one from a git bisect log)", dir)
	case sess.Kind == store.KindRun:
		return nil, bisect.Usagef("the latest bisection in %s is a git bisect run session (%d): mark its commits with git bisect good, bad or skip", dir, sess.ID)
	case sess.Identity()[store.KeyBinaries] != "":
		return nil, bisect.Usagef("session %d in %s measures releases on the vendors' binary tarballs (--binaries): mark commits once the bisection goes on from source between the two releases it narrows to (perfbisect status says when)", sess.ID, dir)
	case sess.State == store.Reset || sess.State == store.Failed:
		return nil, bisect.Usagef("session %d in %s was %s: begin a new one (perfbisect start, or perfbisect replay LOG)", sess.ID, dir, sess.State)
	case sess.State == store.Done && sess.Outcome == string(session.NoRegression):
		return nil, bisect.Usagef("session %d in %s found no regression between its endpoints: there is no search to mark", sess.ID, dir)
	case sess.State == store.Done && sess.Outcome == string(session.Undecided):
		return nil, bisect.Usagef("session %d in %s could not tell its endpoints apart (too much run noise for the change): there is no search to mark; begin a new one with more runs (--max-repeats) or less noise", sess.ID, dir)
	}
	repo, err := git.PlainOpen(sess.Identity().Repo())
	if err != nil {
		return nil, bisect.Usagef("session %d's repository %s cannot be opened: %v", sess.ID, sess.Identity().Repo(), err)
	}
	commits, sameAs, err := bisect.SearchedRange(repo, sess.Good, sess.Bad, sess.Identity().LeavesOutDocCommits())
	if err != nil {
		return nil, With(OutcomeOf(err), err)
	}
	events, err := st.Events(sess.ID)
	if err != nil {
		return nil, With(Failure, err)
	}
	var earlier []session.Marked
	for _, e := range events {
		if e.Kind == session.EventMark {
			m, _ := session.ParseMark(e.Mark)
			earlier = append(earlier, session.Marked{Commit: e.Commit, Mark: m, Reason: e.Reason})
		}
	}
	where := fmt.Sprintf("session %d", sess.ID)
	marked, err := resolveMarks(repo, commits, sameAs, sess.Good, sess.Bad, sess.Identity().FirstParent(), earlier, marks, where, nil)
	if err != nil {
		return nil, err
	}
	for i, m := range marked {
		if err := st.Append(sess.ID, len(events)+i, session.MarkEvent(m)); err != nil {
			return nil, With(Failure, err)
		}
	}
	res := &MarkResult{Session: sess, Marked: marked}
	if sess.State == store.Done && len(marked) > 0 {
		if err := st.Reopen(sess.ID); err != nil {
			return nil, With(Failure, err)
		}
		res.Reopened, res.Was = true, sess.Outcome
	}
	return res, nil
}

// resolveMarks resolves marks in repo and checks each against the range of
// good..bad (commits; firstParent as the session's) and against the hand
// marks given before (earlier, and the ones before it in marks): it must be
// a commit the session searches (not good, not bad, inside the range) and
// agree with them (good on no descendant of a bad mark, bad on no ancestor
// of a good one; marking a commit again replaces its mark). A mark outside
// the range is a usage error naming where (the session), or, with log set,
// left out with a line on log (a git bisect log's marks beyond the
// endpoints). A mark on a commit the session left out of its search
// (sameAs: one that changes only documentation, tests or CI files) is the
// same mark on the commit whose server it builds (one that builds good's
// server: nothing, or bad refused). Errors (usage) name the revision as
// typed.
func resolveMarks(repo *git.Repository, commits []bisect.Commit, sameAs map[string]string, good, bad string, firstParent bool, earlier []session.Marked, marks []HandMark, where string, log io.Writer) ([]session.Marked, error) {
	opts := bisect.Options{FirstParent: firstParent}
	base, err := bisect.NewSearchOptions(commits, []string{good}, bad, opts)
	if err != nil {
		return nil, With(Usage, err)
	}
	searched := map[string]bool{}
	for _, h := range base.Candidates() {
		searched[h] = h != bad
	}
	all := append([]session.Marked(nil), earlier...)
	var out []session.Marked
	for _, hm := range marks {
		hashes, err := markedCommits(repo, hm.Rev, hm.Mark)
		if err != nil {
			return nil, err
		}
		for _, h := range hashes {
			reason := strings.TrimSpace(hm.Reason)
			if reason == "" {
				reason = "no reason given"
			}
			if to, ok := sameAs[h]; ok {
				switch {
				case to == good && hm.Mark == bisect.Bad:
					return nil, bisect.Usagef("%s %s (%.10s): it changes only documentation, tests or CI files, so it builds the good endpoint's server; a bad mark contradicts the endpoint", hm.Mark, hm.Rev, h)
				case to == good:
					continue // the good endpoint's server: measured, good
				}
				reason += fmt.Sprintf(" (given for %.10s, which changes only documentation, tests or CI files: the same server)", h)
				h = to
			}
			if !searched[h] {
				if strings.Contains(hm.Rev, "..") {
					continue // a skip range: its commits outside the search do not matter
				}
				why := fmt.Sprintf("%s (%.10s) is not a commit %s searches: marks apply to the commits after good %.10s up to and before bad %.10s", hm.Rev, h, where, good, bad)
				if h == good || h == bad {
					why = fmt.Sprintf("%s (%.10s) is an endpoint of %s: the endpoints are measured, not marked", hm.Rev, h, where)
				}
				if log != nil {
					fmt.Fprintf(log, "perfbisect: %s %s left out: %s\n", hm.Mark, hm.Rev, why)
					continue
				}
				return nil, bisect.Usagef("%s", why)
			}
			if !consistent(commits, good, bad, opts, all, h, hm.Mark) {
				return nil, bisect.Usagef("%s %s (%.10s) contradicts the hand marks of %s (%s): a good commit cannot come after a bad one",
					hm.Mark, hm.Rev, h, where, describeMarks(latest(all)))
			}
			m := session.Marked{Commit: h, Mark: hm.Mark, Reason: reason}
			if slices.ContainsFunc(latest(all), func(x session.Marked) bool { return x.Commit == h && x.Mark == hm.Mark }) {
				continue // marked so already
			}
			all = append(all, m)
			out = append(out, m)
		}
	}
	return out, nil
}

// markedCommits resolves the revision of a mark: one commit, or for a skip
// the commits of a range A..B, as git bisect skip takes (those of B not in
// A). Errors (usage) name the revision.
func markedCommits(repo *git.Repository, rev string, m bisect.Mark) ([]string, error) {
	from, to, isRange := strings.Cut(rev, "..")
	if !isRange {
		h, err := bisect.Resolve(repo, rev)
		if err != nil {
			return nil, With(Usage, fmt.Errorf("%s: %w", rev, err))
		}
		return []string{h}, nil
	}
	if m != bisect.Skip {
		return nil, bisect.Usagef("%s: a range marks commits skip only (as git bisect skip); mark good or bad one commit", rev)
	}
	a, err := bisect.Resolve(repo, from)
	if err != nil {
		return nil, With(Usage, fmt.Errorf("%s: %w", rev, err))
	}
	b, err := bisect.Resolve(repo, to)
	if err != nil {
		return nil, With(Usage, fmt.Errorf("%s: %w", rev, err))
	}
	cs, err := bisect.Range(repo, a, b)
	if err != nil {
		return nil, With(OutcomeOf(err), fmt.Errorf("%s: %w", rev, err))
	}
	var out []string
	for _, c := range cs {
		out = append(out, c.Hash)
	}
	return out, nil
}

// latest keeps each commit's last mark of ms, in the order the commits were
// first marked.
func latest(ms []session.Marked) []session.Marked {
	last := map[string]session.Marked{}
	var order []string
	for _, m := range ms {
		if _, ok := last[m.Commit]; !ok {
			order = append(order, m.Commit)
		}
		last[m.Commit] = m
	}
	out := make([]session.Marked, 0, len(order))
	for _, h := range order {
		out = append(out, last[h])
	}
	return out
}

// consistent reports whether marking h with m agrees with the last marks of
// the other commits (bisect.Search.Consistent).
func consistent(commits []bisect.Commit, good, bad string, opts bisect.Options, marks []session.Marked, h string, m bisect.Mark) bool {
	s, err := bisect.NewSearchOptions(commits, []string{good}, bad, opts)
	if err != nil {
		return false
	}
	for _, x := range latest(marks) {
		if x.Commit != h {
			s.Mark(x.Commit, x.Mark)
		}
	}
	return s.Consistent(h, m)
}

// describeMarks lists hand marks as "bad 1a2b3c4d5e, good 5e6f7a8b9c".
func describeMarks(ms []session.Marked) string {
	var parts []string
	for _, m := range ms {
		parts = append(parts, fmt.Sprintf("%s %.10s", m.Mark, m.Commit))
	}
	return strings.Join(parts, ", ")
}

// ParseMark reads a verdict as git bisect spells it: good or old, bad or
// new, skip (session.ParseMark).
func ParseMark(word string) (bisect.Mark, error) { return session.ParseMark(word) }

// SearchBayes is the default search, probabilistic bisection
// (session.SearchBayes).
const SearchBayes = session.SearchBayes
