package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
)

// Status is a bisection read back from its store, as `perfbisect status` and
// `perfbisect log` show it: the stored session, its decisions in order, the
// runs it stored, its build attempts and the marks by hand not taken yet,
// with what only the caller can tell (whether a perfbisect works on it now,
// how to go on, the classic search's next commit).
type Status struct {
	Session  *store.Session
	Steps    []session.Step
	Runs     int
	Builds   []store.Build
	Pending  []session.Marked
	Subjects Subjects // subject lines; "" when the repository is gone
	Dir      string   // the state directory
	// State is the session's state in words when the caller knows more than
	// the store ("running (a perfbisect is working on it now)"); "": the
	// stored state.
	State string
	// Resume is how to go on with an interrupted session, a whole line
	// ("continue with: perfbisect resume ..."); "" when nothing is to be
	// resumed (it runs elsewhere, or ended).
	Resume string
	// Remaining is the classic search's candidates left, Next the commit it
	// tests next; Remaining 0: not known (a probabilistic search, or the
	// repository is gone).
	Remaining int
	Next      string
	// Note is a line on what comes next that the numbers above cannot say
	// (a probabilistic search computes its posterior when it goes on); "":
	// none.
	Note string
}

// WriteStatus writes where the session stands: its state, command,
// endpoints, runs, build attempts and decisions, the marks by hand not taken
// yet, then what comes next or the answer (decoded from the stored
// Document).
func WriteStatus(w io.Writer, s Status) {
	x := s.Session
	state := s.State
	if state == "" {
		state = string(x.State)
	}
	fmt.Fprintf(w, "session %d: %s", x.ID, state)
	if x.Outcome != "" {
		fmt.Fprintf(w, " (%s)", x.Outcome)
	}
	fmt.Fprintf(w, "\nstarted %s, last activity %s\n", x.Created.Local().Format("2006-01-02 15:04:05"), x.Updated.Local().Format("2006-01-02 15:04:05"))
	fmt.Fprintf(w, "command: %s\n", x.CommandLine())
	fmt.Fprintf(w, "state:   %s\n", s.Dir)
	fmt.Fprintf(w, "good:    %.10s %s\nbad:     %.10s %s\n", x.Good, s.Subjects(x.Good), x.Bad, s.Subjects(x.Bad))
	fmt.Fprintf(w, "runs stored: %d; decisions: %d; builds: %s\n", s.Runs, len(s.Steps), buildCount(s.Builds, true))
	for _, st := range s.Steps {
		fmt.Fprintf(w, "  %-9s %.10s %-9s %-13s %s\n", st.Role, st.Commit, st.Verdict, DecisionN(st), st.Reason)
	}
	for _, m := range s.Pending {
		fmt.Fprintf(w, "  %-9s %.10s %-9s %-13s marked by hand: %s (taken when the session goes on)\n", "mark", m.Commit, m.Mark, "by hand", m.Reason)
	}
	switch {
	case x.Kind == store.KindRun && x.State == store.Running:
	case x.State == store.Running:
		if s.Note != "" {
			fmt.Fprintln(w, s.Note)
		}
		if s.Remaining > 0 {
			fmt.Fprintf(w, "remaining: %d candidate(s)", s.Remaining)
			if s.Next != "" {
				fmt.Fprintf(w, "; next to test: %.10s %s", s.Next, s.Subjects(s.Next))
			}
			fmt.Fprintln(w)
		}
		if s.Resume != "" {
			fmt.Fprintln(w, s.Resume)
		}
	case x.State == store.Done, x.State == store.Failed, x.State == store.Reset:
		doc := storedDocument(x)
		if line := doc.ReleasesLine(); line != "" {
			fmt.Fprintln(w, line)
		}
		if doc.FirstBad != nil {
			fmt.Fprintf(w, "first bad commit: %s %s\n", *doc.FirstBad, s.Subjects(*doc.FirstBad))
		}
		for _, h := range doc.Range {
			fmt.Fprintf(w, "  candidate: %s %s\n", h, s.Subjects(h))
		}
		if doc.Why != "" {
			fmt.Fprintln(w, doc.Why)
		}
		if doc.Error != "" {
			fmt.Fprintln(w, "error:", doc.Error)
		}
	}
}

// WriteLog writes the session in git bisect log's format (git bisect replay
// reads it back), with perfbisect's evidence as comment lines. An unfinished
// start session is "unfinished" (status says whether a perfbisect works on
// it now).
func WriteLog(w io.Writer, s Status) {
	x := s.Session
	state := string(x.State)
	if x.State == store.Running && x.Kind == store.KindStart {
		state = "unfinished"
	}
	fmt.Fprintf(w, "# perfbisect session %d, %s, started %s: %s\n", x.ID, state, x.Created.UTC().Format("2006-01-02T15:04:05Z"), x.CommandLine())
	fmt.Fprintf(w, "# bad: [%s] %s\n# good: [%s] %s\n", x.Bad, s.Subjects(x.Bad), x.Good, s.Subjects(x.Good))
	opt := ""
	if x.Identity().FirstParent() {
		opt = "'--first-parent' "
	}
	fmt.Fprintf(w, "git bisect start %s'%s' '%s'\n", opt, x.Bad, x.Good)
	lastBad := x.Bad // git keeps the last bad mark it is given
	mark := func(verdict, commit string) {
		fmt.Fprintf(w, "git bisect %s %s\n", verdict, commit)
		if verdict == string(session.VerdictBad) {
			lastBad = commit
		}
	}
	for _, st := range s.Steps {
		switch st.Role {
		case session.RoleEndpoints:
			fmt.Fprintf(w, "# endpoints: %s (%s): %s\n", st.Verdict, DecisionN(st), st.Reason)
		case session.RoleMidpoint:
			fmt.Fprintf(w, "# %s: [%s] %s\n", st.Verdict, st.Commit, s.Subjects(st.Commit))
			fmt.Fprintf(w, "#   %s: %s", DecisionN(st), st.Reason)
			if st.Note != "" {
				fmt.Fprintf(w, "; %s", st.Note)
			}
			fmt.Fprintln(w)
			mark(string(st.Verdict), st.Commit)
		case session.RoleConfirm:
			fmt.Fprintf(w, "# confirm %.10s against its parent %.10s: %s (%s): %s\n", st.Commit, st.Against, st.Verdict, DecisionN(st), st.Reason)
		}
	}
	for _, m := range s.Pending {
		fmt.Fprintf(w, "# %s: [%s] %s\n#   marked by hand: %s (taken when the session goes on)\n", m.Mark, m.Commit, s.Subjects(m.Commit), m.Reason)
		mark(m.Mark.String(), m.Commit)
	}
	if x.State == store.Done && len(x.Result) > 0 {
		doc := storedDocument(x)
		for _, l := range doc.LeftOut {
			if l.Verdict != "" {
				fmt.Fprintf(w, "# %s: [%s] %s\n#   left out: it changes only documentation, tests or CI files (%s): its parent's server\n", l.Verdict, l.Commit, l.Subject, l.Changes)
				mark(l.Verdict, l.Commit)
			}
		}
		if doc.FirstBad != nil && lastBad != *doc.FirstBad && doc.Result == "found" {
			// A bad mark on a newer commit came after the first bad
			// commit's (the probabilistic search writes its verdicts
			// oldest first): git would search again up to that one.
			fmt.Fprintf(w, "# the first bad commit's mark again, last: git keeps the last bad mark it is given\n")
			mark(string(session.VerdictBad), *doc.FirstBad)
		}
		if doc.FirstBad != nil {
			fmt.Fprintf(w, "# first bad commit: [%s] %s\n", *doc.FirstBad, s.Subjects(*doc.FirstBad))
		}
		fmt.Fprintf(w, "# %s: %s\n", x.Outcome, doc.Why)
	}
}

// storedDocument decodes a bisection's stored result (a Document; the zero
// Document when there is none or it does not decode).
func storedDocument(x *store.Session) Document {
	var doc Document
	if len(x.Result) > 0 {
		_ = json.Unmarshal(x.Result, &doc)
	}
	return doc
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
		return fmt.Sprintf("n=%d", st.Looks) // a probabilistic step: the commit's runs
	default:
		return "no runs"
	}
}

// WriteSessionList writes sessions as report --list shows them: one row per
// session (number, kind, state, outcome, start in local time, the
// revisions' hashes), columns aligned.
func WriteSessionList(w io.Writer, sessions []*store.Session) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "session\tkind\tstate\toutcome\tstarted\trevisions\n")
	for _, s := range sessions {
		good, bad := listSides(s)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s..%s\n", s.ID, s.Kind, s.State, s.Outcome, s.Created.Local().Format("2006-01-02 15:04"), good, bad)
	}
	return tw.Flush()
}

// listSides names a listed session's two sides: a revision by its short
// hash, a comparison's other sides as compare names them ("HEAD
// [stat.cnf]", "/usr"): from the ended session's document, else the
// argument its identity keeps.
func listSides(s *store.Session) (good, bad string) {
	var doc struct {
		Base *SideDoc `json:"base_side"`
		Head *SideDoc `json:"head_side"`
	}
	if len(s.Result) > 0 {
		_ = json.Unmarshal(s.Result, &doc)
	}
	id := s.Identity()
	name := func(key string, sd *SideDoc, idKey string) string {
		// The identity keeps the side as app.Side.Describe writes it:
		// "ARG: WHAT, OPTION FILE".
		if arg, rest, ok := strings.Cut(id[idKey], ": "); sd == nil && ok && strings.HasPrefix(key, "side-") {
			sd = &SideDoc{Arg: arg}
			if i := strings.LastIndex(rest, ", "); i >= 0 && rest[i+2:] != "no option file" {
				sd.OptionFile = rest[i+2:]
			}
		}
		return sideName(key, sd)
	}
	return name(s.Good, doc.Base, store.KeyBaseSide), name(s.Bad, doc.Head, store.KeyHeadSide)
}
