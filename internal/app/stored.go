package app

import (
	"encoding/json"
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
			applied[st.Commit+" "+st.Verdict] = true
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

// WriteStatus writes where the session stands, as `perfbisect status` shows
// it: its state (an unfinished start is "running" while a perfbisect holds
// the state directory dir, else "unfinished (interrupted)" with the resume
// command), command, endpoints, runs and decisions, and what comes next or
// the answer.
func (s *Stored) WriteStatus(w io.Writer, dir string) {
	x := s.Session
	state := string(x.State)
	interrupted := false // resume is the way on only when nothing works on it
	if x.State == store.Running && x.Kind == store.KindStart {
		unlock, err := measure.LockStateDir(dir)
		switch {
		case err == nil:
			unlock()
			state = "unfinished (interrupted: no perfbisect is working on it)"
			interrupted = true
		case errors.Is(err, measure.ErrStateDirInUse):
			state = "running (a perfbisect is working on it now)"
		default: // the lock cannot be taken at all: a read-only disk, say
			state = fmt.Sprintf("unfinished (no perfbisect can work on it now: %v)", err)
			interrupted = true
		}
	}
	if x.Kind == store.KindRun && x.State == store.Running {
		state = "git bisect run bisection (perfbisect run; git bisect log shows git's side)"
	}
	fmt.Fprintf(w, "session %d: %s", x.ID, state)
	if x.Outcome != "" {
		fmt.Fprintf(w, " (%s)", x.Outcome)
	}
	fmt.Fprintf(w, "\nstarted %s, last activity %s\n", x.Created.Local().Format("2006-01-02 15:04:05"), x.Updated.Local().Format("2006-01-02 15:04:05"))
	fmt.Fprintf(w, "command: perfbisect %s\n", strings.Join(x.Args, " "))
	fmt.Fprintf(w, "state:   %s\n", dir)
	fmt.Fprintf(w, "good:    %.10s %s\nbad:     %.10s %s\n", x.Good, s.Subject(x.Good), x.Bad, s.Subject(x.Bad))
	var secs float64
	failed := 0
	for _, b := range s.Builds {
		secs += b.Seconds
		if b.Error != "" {
			failed++
		}
	}
	fmt.Fprintf(w, "runs stored: %d; decisions: %d; build attempts: %d (%d failed, %.0fs in all)\n", s.Runs, len(s.Steps), len(s.Builds), failed, secs)
	for _, st := range s.Steps {
		fmt.Fprintf(w, "  %-9s %.10s %-9s %-13s %s\n", st.Role, st.Commit, st.Verdict, DecisionN(st), st.Reason)
	}
	for _, m := range s.Pending {
		fmt.Fprintf(w, "  %-9s %.10s %-9s %-13s marked by hand: %s (taken when the session goes on)\n", "mark", m.Commit, m.Mark, "by hand", m.Reason)
	}
	resume := func() {
		if interrupted {
			where := Where(dir, x.Identity().Repo())
			fmt.Fprintf(w, "continue with: perfbisect resume %s   (end it with: perfbisect reset %s)\n", where, where)
		}
	}
	switch {
	case x.Kind == store.KindRun && x.State == store.Running:
	case x.State == store.Running && SearchOf(x) == session.SearchBayes:
		fmt.Fprintf(w, "probabilistic search: the posterior over the first bad commit is computed from the stored runs when the session goes on (its decisions are written when it ends)\n")
		resume()
	case x.State == store.Running:
		if s.Repo != nil {
			if search, err := ReplaySearch(s.Repo, x.Good, x.Bad, x.Identity().FirstParent(), append(pendingSteps(s.Pending), s.Steps...)); err == nil {
				next, _ := search.Next()
				fmt.Fprintf(w, "remaining: %d candidate(s)", len(search.Candidates()))
				if next != "" {
					fmt.Fprintf(w, "; next to test: %.10s %s", next, s.Subject(next))
				}
				fmt.Fprintln(w)
			}
		}
		resume()
	case x.State == store.Done, x.State == store.Failed, x.State == store.Reset:
		var doc struct {
			FirstBad *string  `json:"first_bad"`
			Range    []string `json:"range"`
			Why      string   `json:"why"`
			Error    string   `json:"error"`
		}
		_ = json.Unmarshal(x.Result, &doc)
		if doc.FirstBad != nil {
			fmt.Fprintf(w, "first bad commit: %s %s\n", *doc.FirstBad, s.Subject(*doc.FirstBad))
		}
		for _, h := range doc.Range {
			fmt.Fprintf(w, "  candidate: %s %s\n", h, s.Subject(h))
		}
		if doc.Why != "" {
			fmt.Fprintln(w, doc.Why)
		}
		if doc.Error != "" {
			fmt.Fprintln(w, "error:", doc.Error)
		}
	}
}

// DecisionN says how many runs a decision used: per side for the endpoints
// and the confirmation ("n=6+6"), blocks of (good, bad, candidate) for a
// classic midpoint ("3 blocks"), a probabilistic step's runs of the commit
// ("n=4").
func DecisionN(st session.Step) string {
	switch {
	case st.Compare != nil:
		return fmt.Sprintf("n=%d+%d", st.Compare.NOld, st.Compare.NNew)
	case st.Class != nil:
		return fmt.Sprintf("%d blocks", st.Class.N)
	case st.Hand:
		return "by hand"
	case st.Looks > 0:
		return fmt.Sprintf("n=%d", st.Looks) // a probabilistic search's step: the commit's runs
	default:
		return "no runs"
	}
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

// ReplaySearch rebuilds the classic search of a stored session from its
// midpoint decisions. Errors: the range between good and bad cannot be read.
func ReplaySearch(r *git.Repository, good, bad string, firstParent bool, steps []session.Step) (*bisect.Search, error) {
	commits, err := bisect.Range(r, good, bad)
	if err != nil {
		return nil, err
	}
	search, err := bisect.NewSearchOptions(commits, []string{good}, bad, bisect.Options{FirstParent: firstParent})
	if err != nil {
		return nil, err
	}
	for _, st := range steps {
		if st.Role != session.RoleMidpoint {
			continue
		}
		switch st.Verdict {
		case "good":
			search.Mark(st.Commit, bisect.Good)
		case "bad":
			search.Mark(st.Commit, bisect.Bad)
		case "skip":
			search.Mark(st.Commit, bisect.Skip)
		}
	}
	return search, nil
}

// pendingSteps are marks by hand as the midpoint steps they become.
func pendingSteps(ms []session.Marked) []session.Step {
	var out []session.Step
	for _, m := range ms {
		out = append(out, session.Step{Role: session.RoleMidpoint, Commit: m.Commit, Verdict: m.Mark.String(), Reason: "marked by hand: " + m.Reason, Hand: true})
	}
	return out
}

// WriteLog writes the session in git bisect log's format (git bisect replay
// reads it back), with perfbisect's evidence as comment lines.
func (s *Stored) WriteLog(w io.Writer) {
	x := s.Session
	state := string(x.State)
	if x.State == store.Running && x.Kind == store.KindStart {
		state = "unfinished" // status says whether a perfbisect works on it now
	}
	fmt.Fprintf(w, "# perfbisect session %d, %s, started %s: perfbisect %s\n", x.ID, state, x.Created.UTC().Format("2006-01-02T15:04:05Z"), strings.Join(x.Args, " "))
	fmt.Fprintf(w, "# bad: [%s] %s\n# good: [%s] %s\n", x.Bad, s.Subject(x.Bad), x.Good, s.Subject(x.Good))
	opt := ""
	if x.Identity().FirstParent() {
		opt = "'--first-parent' "
	}
	fmt.Fprintf(w, "git bisect start %s'%s' '%s'\n", opt, x.Bad, x.Good)
	for _, st := range s.Steps {
		switch st.Role {
		case session.RoleEndpoints:
			fmt.Fprintf(w, "# endpoints: %s (%s): %s\n", st.Verdict, DecisionN(st), st.Reason)
		case session.RoleMidpoint:
			fmt.Fprintf(w, "# %s: [%s] %s\n", st.Verdict, st.Commit, s.Subject(st.Commit))
			fmt.Fprintf(w, "#   %s: %s", DecisionN(st), st.Reason)
			if st.Note != "" {
				fmt.Fprintf(w, "; %s", st.Note)
			}
			fmt.Fprintln(w)
			fmt.Fprintf(w, "git bisect %s %s\n", st.Verdict, st.Commit)
		case session.RoleConfirm:
			fmt.Fprintf(w, "# confirm %.10s against its parent %.10s: %s (%s): %s\n", st.Commit, st.Against, st.Verdict, DecisionN(st), st.Reason)
		}
	}
	for _, m := range s.Pending {
		fmt.Fprintf(w, "# %s: [%s] %s\n#   marked by hand: %s (taken when the session goes on)\n", m.Mark, m.Commit, s.Subject(m.Commit), m.Reason)
		fmt.Fprintf(w, "git bisect %s %s\n", m.Mark, m.Commit)
	}
	if x.State == store.Done && len(x.Result) > 0 {
		var doc struct {
			FirstBad *string `json:"first_bad"`
			Why      string  `json:"why"`
		}
		_ = json.Unmarshal(x.Result, &doc)
		if doc.FirstBad != nil {
			fmt.Fprintf(w, "# first bad commit: [%s] %s\n", *doc.FirstBad, s.Subject(*doc.FirstBad))
		}
		fmt.Fprintf(w, "# %s: %s\n", x.Outcome, doc.Why)
	}
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
