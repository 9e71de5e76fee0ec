package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/internal/app"
	"github.com/perfbisect/perfbisect/internal/reap"
)

// The commands around a stored session, as git bisect has them: resume,
// status, log, reset.

func stateFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "repo", Value: ".", Usage: "the server's git source tree (finds the default state directory)"},
		&cli.StringFlag{Name: "state-dir", Usage: "the state directory (default: the user's cache dir, per repository)"},
	}
}

// openStateStore opens the store of the state directory the flags name,
// without locking it (reading is safe beside a running session). It returns a
// nil store, and creates nothing, when the directory holds no store.
func openStateStore(c *cli.Context) (*store.Store, string, error) {
	dir, err := commandStateDir(c)
	if err != nil {
		return nil, "", err
	}
	if _, err := os.Stat(filepath.Join(dir, store.FileName)); err != nil {
		return nil, dir, nil
	}
	st, err := store.Open(dir)
	if err != nil {
		return nil, "", app.With(app.Failure, err)
	}
	return st, dir, nil
}

// commandStateDir is the state directory of a session command: --state-dir,
// or the default one of the repository --repo names (the current directory's
// by default, so these commands are run in the server's tree or given --repo).
func commandStateDir(c *cli.Context) (string, error) {
	root, _ := filepath.Abs(c.String("repo"))
	if c.String("state-dir") == "" {
		r, err := bisect.OpenRepo(c.String("repo"))
		if err != nil {
			// OpenRepo's message already says to pass --repo.
			return "", app.With(app.Usage, fmt.Errorf("%w; or name the state directory with --state-dir", err))
		}
		if wt, err := r.Worktree(); err == nil {
			root = wt.Filesystem.Root()
		}
	}
	// Like stateDirOf, without creating anything: these commands only read or
	// end what a start left.
	dir := c.String("state-dir")
	if dir == "" {
		var err error
		if dir, err = defaultStateDir(root); err != nil {
			return "", err
		}
	}
	dir, _ = filepath.Abs(dir)
	if _, err := os.Stat(dir); err == nil {
		dir = reap.Canonical(dir)
	}
	return dir, nil
}

// whereFlag is the flag that finds stateDir again from anywhere: --repo ROOT
// when it is ROOT's default state directory, else --state-dir DIR.
func whereFlag(stateDir, repoRoot string) string {
	if d, err := defaultStateDir(repoRoot); err == nil && repoRoot != "" {
		if _, err := os.Stat(d); err == nil && reap.Canonical(d) == stateDir {
			return "--repo " + repoRoot
		}
	}
	return "--state-dir " + stateDir
}

func sessionCommands() []*cli.Command {
	onUsage := func(c *cli.Context, err error, _ bool) error {
		return usageErr("%s", flagError(c, err))
	}
	return []*cli.Command{
		{
			Name:         "resume",
			Usage:        "continue the unfinished session of the state directory (runs already stored are not measured again)",
			UsageText:    "perfbisect resume [--repo DIR] [--state-dir DIR]",
			Flags:        append(stateFlags(), &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress lines on stderr"}),
			Action:       resumeAction,
			OnUsageError: onUsage,
		},
		{
			Name:         "status",
			Usage:        "show where the state directory's latest session stands",
			UsageText:    "perfbisect status [--repo DIR] [--state-dir DIR]",
			Flags:        stateFlags(),
			Action:       statusAction,
			OnUsageError: onUsage,
		},
		{
			Name:  "log",
			Usage: "print the latest session as a git bisect log, with the evidence of every decision as comments",
			UsageText: "perfbisect log [--repo DIR] [--state-dir DIR] > bisect.log\n\n" +
				"The output can be replayed with git bisect replay bisect.log.",
			Flags:        stateFlags(),
			Action:       logAction,
			OnUsageError: onUsage,
		},
		{
			Name:         "reset",
			Usage:        "end the unfinished session (builds and datadir snapshots are kept for later sessions)",
			UsageText:    "perfbisect reset [--repo DIR] [--state-dir DIR]",
			Flags:        stateFlags(),
			Action:       resetAction,
			OnUsageError: onUsage,
		},
	}
}

func resumeAction(c *cli.Context) error {
	st, dir, err := openStateStore(c)
	if err != nil {
		return err
	}
	if st == nil {
		return usageErr("no session in %s (the state directory of --repo %s; perfbisect start begins one)", dir, c.String("repo"))
	}
	cur, err := st.Current(store.KindStart)
	st.Close()
	if err != nil {
		return app.With(app.Failure, err)
	}
	if cur == nil {
		return usageErr("no unfinished session in %s (the state directory of --repo %s; perfbisect status shows the last one, perfbisect start begins a new one)", dir, c.String("repo"))
	}
	if err := os.Chdir(cur.Dir); err != nil {
		return usageErr("the session was started in %s, which is gone: %v (run its start command again from elsewhere with absolute paths: perfbisect %s)",
			cur.Dir, err, strings.Join(cur.Args, " "))
	}
	args := append([]string{"perfbisect"}, cur.Args...)
	args = append(args, "--state-dir", dir)
	if c.Bool("quiet") {
		args = append(args, "--quiet")
	}
	fmt.Fprintf(os.Stderr, "perfbisect: resuming: perfbisect %s (in %s)\n", strings.Join(cur.Args, " "), cur.Dir)
	resuming = true
	return newApp().RunContext(c.Context, args)
}

// storedRun is a session read back from the store with its decisions.
type storedRun struct {
	sess   *store.Session
	steps  []session.Step
	total  int
	repo   *git.Repository
	builds []store.Build
}

func loadLatest(c *cli.Context) (*storedRun, string, error) {
	st, dir, err := openStateStore(c)
	if err != nil || st == nil {
		return nil, dir, err
	}
	defer st.Close()
	// The bisections only: a compare or a scan is not a session to resume,
	// show as a bisection or log for git.
	sess, err := st.LatestOf(store.KindStart, store.KindRun)
	if err != nil {
		return nil, "", app.With(app.Failure, err)
	}
	if sess, err = endRunSession(st, sess); err != nil {
		return nil, "", app.With(app.Failure, err)
	}
	if sess == nil {
		return nil, dir, nil
	}
	out := &storedRun{sess: sess}
	steps, err := st.Steps(sess.ID)
	if err != nil {
		return nil, "", app.With(app.Failure, err)
	}
	for _, s := range steps {
		var x session.Step
		if err := json.Unmarshal(s.Evidence, &x); err != nil {
			return nil, "", app.With(app.Failure, fmt.Errorf("store %s: step %d: %w", st.Path(), s.Seq, err))
		}
		out.steps = append(out.steps, x)
	}
	events, err := st.Events(sess.ID)
	if err != nil {
		return nil, "", app.With(app.Failure, err)
	}
	for _, e := range events {
		if e.Run != nil {
			out.total++
		}
	}
	if out.builds, err = st.Builds(sess.ID); err != nil {
		return nil, "", app.With(app.Failure, err)
	}
	if r := sess.Identity().Repo(); r != "" {
		out.repo, _ = git.PlainOpen(r)
	}
	return out, dir, nil
}

func (s *storedRun) subject(h string) string {
	if s.repo == nil {
		return ""
	}
	return bisect.Subject(s.repo, h)
}

func statusAction(c *cli.Context) error {
	s, dir, err := loadLatest(c)
	if err != nil {
		return err
	}
	w := c.App.Writer
	if s == nil {
		return usageErr("no session in %s (the state directory of --repo %s; pass the server's tree with --repo, or --state-dir)", dir, c.String("repo"))
	}
	x := s.sess
	state := x.State
	interrupted := false // resume is the way on only when nothing works on it
	if x.State == store.Running && x.Kind == store.KindStart {
		if unlock, err := measure.LockStateDir(dir); err == nil {
			unlock()
			state = "unfinished (interrupted: no perfbisect is working on it)"
			interrupted = true
		} else {
			state = "running (a perfbisect is working on it now)"
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
	fmt.Fprintf(w, "good:    %.10s %s\nbad:     %.10s %s\n", x.Good, s.subject(x.Good), x.Bad, s.subject(x.Bad))
	var secs float64
	failed := 0
	for _, b := range s.builds {
		secs += b.Seconds
		if b.Error != "" {
			failed++
		}
	}
	fmt.Fprintf(w, "runs stored: %d; decisions: %d; build attempts: %d (%d failed, %.0fs in all)\n", s.total, len(s.steps), len(s.builds), failed, secs)
	for _, st := range s.steps {
		fmt.Fprintf(w, "  %-9s %.10s %-9s %-13s %s\n", st.Role, st.Commit, st.Verdict, decisionN(st), st.Reason)
	}
	switch {
	case x.Kind == store.KindRun && x.State == store.Running:
	case x.State == store.Running && searchOf(x) == session.SearchBayes:
		fmt.Fprintf(w, "probabilistic search: the posterior over the first bad commit is computed from the stored runs when the session goes on (its decisions are written when it ends)\n")
		if interrupted {
			where := whereFlag(dir, x.Identity().Repo())
			fmt.Fprintf(w, "continue with: perfbisect resume %s   (end it with: perfbisect reset %s)\n", where, where)
		}
	case x.State == store.Running:
		if s.repo != nil {
			if search, err := replaySearch(s.repo, x.Good, x.Bad, x.Identity().FirstParent(), s.steps); err == nil {
				next, _ := search.Next()
				fmt.Fprintf(w, "remaining: %d candidate(s)", len(search.Candidates()))
				if next != "" {
					fmt.Fprintf(w, "; next to test: %.10s %s", next, s.subject(next))
				}
				fmt.Fprintln(w)
			}
		}
		if interrupted {
			where := whereFlag(dir, x.Identity().Repo())
			fmt.Fprintf(w, "continue with: perfbisect resume %s   (end it with: perfbisect reset %s)\n", where, where)
		}
	case x.State == store.Done, x.State == store.Failed, x.State == store.Reset:
		var doc struct {
			FirstBad *string  `json:"first_bad"`
			Range    []string `json:"range"`
			Why      string   `json:"why"`
			Error    string   `json:"error"`
		}
		_ = json.Unmarshal(x.Result, &doc)
		if doc.FirstBad != nil {
			fmt.Fprintf(w, "first bad commit: %s %s\n", *doc.FirstBad, s.subject(*doc.FirstBad))
		}
		for _, h := range doc.Range {
			fmt.Fprintf(w, "  candidate: %s %s\n", h, s.subject(h))
		}
		if doc.Why != "" {
			fmt.Fprintln(w, doc.Why)
		}
		if doc.Error != "" {
			fmt.Fprintln(w, "error:", doc.Error)
		}
	}
	return nil
}

// decisionN says how many runs a decision used: per side for the endpoints
// and the confirmation, blocks of (good, bad, candidate) for a midpoint.
func decisionN(st session.Step) string {
	switch {
	case st.Compare != nil:
		return fmt.Sprintf("n=%d+%d", st.Compare.NOld, st.Compare.NNew)
	case st.Class != nil:
		return fmt.Sprintf("%d blocks", st.Class.N)
	case st.Looks > 0:
		return fmt.Sprintf("n=%d", st.Looks) // a probabilistic search's step: the commit's runs
	default:
		return "no runs"
	}
}

// searchOf returns the search strategy a start session was begun with:
// "bayes", or "classic" for sessions stored before the setting existed.
func searchOf(x *store.Session) string {
	if v, ok := x.Identity().Search(); ok {
		return v
	}
	return session.SearchClassic
}

// replaySearch rebuilds the search of a stored session from its midpoint
// decisions.
func replaySearch(r *git.Repository, good, bad string, firstParent bool, steps []session.Step) (*bisect.Search, error) {
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

func logAction(c *cli.Context) error {
	s, dir, err := loadLatest(c)
	if err != nil {
		return err
	}
	if s == nil {
		return usageErr("no session in %s", dir)
	}
	writeBisectLog(c.App.Writer, s)
	return nil
}

// writeBisectLog writes a session in git bisect log's format (git bisect
// replay reads it back), with perfbisect's evidence as comment lines.
func writeBisectLog(w io.Writer, s *storedRun) {
	x := s.sess
	fmt.Fprintf(w, "# perfbisect session %d, %s, started %s: perfbisect %s\n", x.ID, x.State, x.Created.UTC().Format("2006-01-02T15:04:05Z"), strings.Join(x.Args, " "))
	fmt.Fprintf(w, "# bad: [%s] %s\n# good: [%s] %s\n", x.Bad, s.subject(x.Bad), x.Good, s.subject(x.Good))
	opt := ""
	if x.Identity().FirstParent() {
		opt = "'--first-parent' "
	}
	fmt.Fprintf(w, "git bisect start %s'%s' '%s'\n", opt, x.Bad, x.Good)
	for _, st := range s.steps {
		switch st.Role {
		case session.RoleEndpoints:
			fmt.Fprintf(w, "# endpoints: %s (%s): %s\n", st.Verdict, decisionN(st), st.Reason)
		case session.RoleMidpoint:
			fmt.Fprintf(w, "# %s: [%s] %s\n", st.Verdict, st.Commit, s.subject(st.Commit))
			fmt.Fprintf(w, "#   %s: %s", decisionN(st), st.Reason)
			if st.Note != "" {
				fmt.Fprintf(w, "; %s", st.Note)
			}
			fmt.Fprintln(w)
			fmt.Fprintf(w, "git bisect %s %s\n", st.Verdict, st.Commit)
		case session.RoleConfirm:
			fmt.Fprintf(w, "# confirm %.10s against its parent %.10s: %s (%s): %s\n", st.Commit, st.Against, st.Verdict, decisionN(st), st.Reason)
		}
	}
	if x.State == store.Done && len(x.Result) > 0 {
		var doc struct {
			FirstBad *string `json:"first_bad"`
			Why      string  `json:"why"`
		}
		_ = json.Unmarshal(x.Result, &doc)
		if doc.FirstBad != nil {
			fmt.Fprintf(w, "# first bad commit: [%s] %s\n", *doc.FirstBad, s.subject(*doc.FirstBad))
		}
		fmt.Fprintf(w, "# %s: %s\n", x.Outcome, doc.Why)
	}
}

func resetAction(c *cli.Context) error {
	dir, err := commandStateDir(c)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, store.FileName)); err != nil {
		fmt.Fprintf(c.App.Writer, "no unfinished session in %s (the state directory of --repo %s)\n", dir, c.String("repo"))
		return nil
	}
	unlock, err := measure.LockStateDir(dir)
	if err != nil {
		return usageErr("%v (stop that perfbisect first)", err)
	}
	defer unlock()
	st, err := store.Open(dir)
	if err != nil {
		return app.With(app.Failure, err)
	}
	defer st.Close()
	cur, err := st.Current(store.KindStart)
	if err != nil {
		return app.With(app.Failure, err)
	}
	if cur == nil {
		fmt.Fprintf(c.App.Writer, "no unfinished session in %s (the state directory of --repo %s)\n", dir, c.String("repo"))
		return nil
	}
	if err := st.End(cur.ID, store.Reset, "reset", nil); err != nil {
		return app.With(app.Failure, err)
	}
	fmt.Fprintf(c.App.Writer, "session %d ended (good %.10s, bad %.10s); builds and datadir snapshots stay in %s\n", cur.ID, cur.Good, cur.Bad, dir)
	return nil
}
