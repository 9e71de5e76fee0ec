package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	git "github.com/go-git/go-git/v5"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
)

// Stored is a bisection read back from a state directory's store: the
// session, its decisions in order, how many runs it stored, its build
// attempts, and the repository it bisects (nil when that is gone).
type Stored struct {
	Session *store.Session
	Steps   []session.Step
	Runs    int
	Builds  []store.Build
	Repo    *git.Repository
	// Pending are the marks by hand stored after the session's last
	// decision on their commit: the session applies them when it goes on.
	Pending []session.Marked
}

// LoadLatest reads the latest bisection of st (a start or a `perfbisect
// run` session; a compare or a scan is not one to resume, show as a
// bisection or log for git). A run session whose git bisection has ended is
// ended first (EndRunSession). It returns nil when there is none. Errors
// (Failure): the store cannot be read.
func LoadLatest(st *store.Store) (*Stored, error) {
	sess, err := st.LatestOf(store.KindStart, store.KindRun)
	if err != nil {
		return nil, With(Failure, err)
	}
	if sess, err = EndRunSession(st, sess); err != nil {
		return nil, With(Failure, err)
	}
	if sess == nil {
		return nil, nil
	}
	out := &Stored{Session: sess}
	if out.Steps, err = st.Decisions(sess.ID); err != nil {
		return nil, With(Failure, err)
	}
	events, err := st.Events(sess.ID)
	if err != nil {
		return nil, With(Failure, err)
	}
	var marks []session.Marked
	for _, e := range events {
		if e.Run != nil {
			out.Runs++
		}
		if e.Kind == session.EventMark {
			m, _ := session.ParseMark(e.Mark)
			marks = append(marks, session.Marked{Commit: e.Commit, Mark: m, Reason: e.Reason})
		}
	}
	applied := map[string]bool{}
	for _, st := range out.Steps {
		if st.Hand {
			applied[st.Commit+" "+string(st.Verdict)] = true
		}
	}
	for _, m := range latest(marks) {
		if !applied[m.Commit+" "+m.Mark.String()] {
			out.Pending = append(out.Pending, m)
		}
	}
	if out.Builds, err = st.Builds(sess.ID); err != nil {
		return nil, With(Failure, err)
	}
	if r := sess.Identity().Repo(); r != "" {
		out.Repo, _ = git.PlainOpen(r)
	}
	return out, nil
}

// Subject is the subject line of commit h ("" when the repository is gone).
func (s *Stored) Subject(h string) string {
	if s.Repo == nil {
		return ""
	}
	return bisect.Subject(s.Repo, h)
}

// Status is the session as status and log show it (report.Status): an
// unfinished start is "running" while a perfbisect holds the state directory
// dir, else "unfinished (interrupted)" with the resume command; a classic
// search's candidates left and next commit come from its stored decisions
// and the pending marks.
func (s *Stored) Status(dir string) report.Status {
	x := s.Session
	out := s.stored()
	out.Dir = dir
	interrupted := false // resume is the way on only when nothing works on it
	if x.State == store.Running && x.Kind == store.KindStart {
		unlock, err := measure.LockStateDir(dir)
		switch {
		case err == nil:
			unlock()
			out.State = "unfinished (interrupted: no perfbisect is working on it)"
			interrupted = true
		case errors.Is(err, measure.ErrStateDirInUse):
			out.State = "running (a perfbisect is working on it now)"
		default: // the lock cannot be taken at all: a read-only disk, say
			out.State = fmt.Sprintf("unfinished (no perfbisect can work on it now: %v)", err)
			interrupted = true
		}
	}
	if x.Kind == store.KindRun && x.State == store.Running {
		out.State = "git bisect run bisection (perfbisect run; git bisect log shows git's side)"
	}
	if interrupted {
		where := Where(dir, x.Identity().Repo())
		out.Resume = fmt.Sprintf("continue with: perfbisect resume %s   (end it with: perfbisect reset %s)", where, where)
	}
	switch {
	case x.Kind != store.KindStart || x.State != store.Running:
	case SearchOf(x) == session.SearchBayes:
		out.Note = "probabilistic search: the posterior over the first bad commit is computed from the stored runs when the session goes on (its decisions are written when it ends)"
	case s.Repo != nil:
		if search, err := ReplaySearch(s.Repo, x, append(pendingSteps(s.Pending), s.Steps...)); err == nil {
			out.Remaining = len(search.Candidates())
			out.Next, _ = search.Next()
		}
	}
	return out
}

// WriteStatus writes where the session stands, as `perfbisect status` shows
// it (report.WriteStatus of Status(dir)).
func (s *Stored) WriteStatus(w io.Writer, dir string) { report.WriteStatus(w, s.Status(dir)) }

// WriteLog writes the session in git bisect log's format, as `perfbisect
// log` shows it (report.WriteLog): what the store holds, without asking
// whether a perfbisect works on it.
func (s *Stored) WriteLog(w io.Writer) { report.WriteLog(w, s.stored()) }

// stored is what the store holds of the session, for report.
func (s *Stored) stored() report.Status {
	return report.Status{Session: s.Session, Steps: s.Steps, Runs: s.Runs, Builds: s.Builds, Pending: s.Pending, Subjects: s.Subject}
}

// SearchOf returns the search strategy a start session was begun with:
// session.SearchBayes, or session.SearchClassic for sessions stored before
// the setting existed.
func SearchOf(x *store.Session) string {
	if v, ok := x.Identity().Search(); ok {
		return v
	}
	return session.SearchClassic
}

// ReplaySearch rebuilds the classic search of stored session x from its
// midpoint decisions (steps), over the range as the session searched it.
// Errors: the range between good and bad cannot be read.
func ReplaySearch(r *git.Repository, x *store.Session, steps []session.Step) (*bisect.Search, error) {
	commits, _, err := bisect.SearchedRange(r, x.Good, x.Bad, x.Identity().LeavesOutDocCommits())
	if err != nil {
		return nil, err
	}
	good, bad := x.Good, x.Bad
	search, err := bisect.NewSearchOptions(commits, []string{good}, bad, bisect.Options{FirstParent: x.Identity().FirstParent()})
	if err != nil {
		return nil, err
	}
	for _, st := range steps {
		if st.Role != session.RoleMidpoint {
			continue
		}
		if m, ok := st.Verdict.Mark(); ok {
			search.Mark(st.Commit, m)
		}
	}
	return search, nil
}

// pendingSteps are marks by hand as the midpoint steps they become.
func pendingSteps(ms []session.Marked) []session.Step {
	var out []session.Step
	for _, m := range ms {
		out = append(out, session.Step{Role: session.RoleMidpoint, Commit: m.Commit, Verdict: session.MarkVerdict(m.Mark), Reason: "marked by hand: " + m.Reason, Hand: true})
	}
	return out
}

// lockedStore takes the state directory dir's lock and opens its store, to
// change a session no perfbisect works on; done closes the store and lets the
// lock go. Errors: usage when a perfbisect holds dir (what names what to do
// then); the store's failures.
func lockedStore(dir, what string) (st *store.Store, done func(), err error) {
	unlock, err := measure.LockStateDir(dir)
	if err != nil {
		return nil, nil, bisect.Usagef("%v (%s)", err, what)
	}
	if st, err = store.Open(dir); err != nil {
		unlock()
		return nil, nil, With(Failure, err)
	}
	return st, func() { st.Close(); unlock() }, nil
}

// Reset ends the unfinished start session of the state directory dir
// (builds and datadir snapshots stay) and returns it; nil when there is none.
// Errors: usage when a perfbisect works on it now (stop it first); the
// store's failures.
func Reset(dir string) (*store.Session, error) {
	if _, err := os.Stat(filepath.Join(dir, store.FileName)); err != nil {
		return nil, nil
	}
	st, done, err := lockedStore(dir, "stop that perfbisect first")
	if err != nil {
		return nil, err
	}
	defer done()
	cur, err := st.Current(store.KindStart)
	if err != nil {
		return nil, With(Failure, err)
	}
	if cur == nil {
		return nil, nil
	}
	if err := st.End(cur.ID, store.Reset, "reset", nil); err != nil {
		return nil, With(Failure, err)
	}
	return cur, nil
}

// Sessions returns every session of st, a `perfbisect run` session whose git
// bisection has ended ended first (EndRunSession). Errors (Failure): the
// store's.
func Sessions(st *store.Store) ([]*store.Session, error) {
	all, err := st.Sessions()
	if err != nil {
		return nil, With(Failure, err)
	}
	for i, s := range all {
		if all[i], err = EndRunSession(st, s); err != nil {
			return nil, With(Failure, err)
		}
	}
	return all, nil
}

// ChooseSession is the session report shows: number arg of all, or the
// latest one with a report when arg is "". Errors (usage, naming the state
// directory dir): arg is not a session number, or no such session.
func ChooseSession(all []*store.Session, arg, dir string) (*store.Session, error) {
	var sess *store.Session
	if arg != "" {
		id, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || id < 1 {
			return nil, bisect.Usagef("session %q: want a session number (see perfbisect report --list)", arg)
		}
		for _, s := range all {
			if s.ID == id {
				sess = s
			}
		}
		if sess == nil {
			return nil, bisect.Usagef("no session %d in %s (see perfbisect report --list)", id, dir)
		}
		return sess, nil
	}
	for _, s := range all {
		if len(s.Result) > 0 && (sess == nil || s.ID > sess.ID) {
			sess = s
		}
	}
	if sess == nil {
		return nil, bisect.Usagef("no finished session in %s (see perfbisect report --list)", dir)
	}
	return sess, nil
}

// OtherSessions describes the sessions of st that status and log do not
// show, compares and scans ("1 compare running, 2 scans"); "" when there
// are none (or the store cannot be read).
func OtherSessions(st *store.Store) string {
	all, err := st.Sessions()
	if err != nil {
		return ""
	}
	counts := map[string]int{}
	var order []string
	for _, x := range all {
		if x.Kind != store.KindCompare && x.Kind != store.KindScan {
			continue
		}
		k := string(x.Kind)
		if x.State == store.Running {
			k += " running"
		}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	var parts []string
	for _, k := range order {
		kind, state, _ := strings.Cut(k, " ")
		if counts[k] > 1 {
			kind += "s"
		}
		parts = append(parts, strings.TrimSpace(fmt.Sprintf("%d %s %s", counts[k], kind, state)))
	}
	return strings.Join(parts, ", ")
}

// WriteSessionList prints the sessions of a state directory, newest last
// (report --list).
func WriteSessionList(w io.Writer, all []*store.Session) error {
	return report.WriteSessionList(w, all)
}
