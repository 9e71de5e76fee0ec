package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/internal/app"
	"github.com/perfbisect/perfbisect/internal/cliflag"
)

// The commands around a stored session, as git bisect has them: resume,
// mark, status, log, reset.

func stateFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "repo", Value: ".", Usage: "the server's git source tree (finds the default state directory)"},
		&cli.StringFlag{Name: "state-dir", Usage: "the state directory (default: the user's cache dir, per repository)"},
	}
}

func sessionCommands() []*cli.Command {
	onUsage := func(c *cli.Context, err error, _ bool) error {
		return usageErr("%s", flagError(c, err))
	}
	return []*cli.Command{
		{
			Name:      "resume",
			Usage:     "continue the unfinished session of the state directory (runs already stored are not measured again)",
			UsageText: "perfbisect resume [--repo DIR] [--state-dir DIR] [--no-explain] [--quiet]",
			Flags: append(stateFlags(), &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress lines on stderr"},
				&cli.BoolFlag{Name: "no-explain", Usage: "do not profile the first bad commit and its parent once it is named, whatever the session was started with (start --no-explain)"}),
			Action:       noArgs(resumeAction),
			OnUsageError: onUsage,
		},
		{
			Name:  "mark",
			Usage: "mark commits of the latest bisection good, bad or skip by hand, with your reason (as git bisect good/bad/skip)",
			UsageText: "perfbisect mark good|bad|skip REV... [--reason TEXT] [--repo DIR] [--state-dir DIR]\n\n" +
				"A mark by hand is certain: the search takes it as it stands (no run is taken of the commit,\n" +
				"runs taken before do not count against it) and the report shows it with your reason. The\n" +
				"bisection must not be running: interrupt it (Ctrl-C; nothing measured is lost), mark, then\n" +
				"perfbisect resume. A bisection that ended (a culprit you doubt, a range you can settle) is\n" +
				"reopened: resume goes on from its stored runs. old and new are good and bad.",
			Flags: append(stateFlags(),
				&cli.StringFlag{Name: "reason", Usage: "why (stored with the mark, shown in status, log and reports)"}),
			Action:       markAction,
			OnUsageError: onUsage,
		},
		{
			Name:         "status",
			Usage:        "show where the state directory's latest session stands",
			UsageText:    "perfbisect status [--repo DIR] [--state-dir DIR]",
			Flags:        stateFlags(),
			Action:       noArgs(statusAction),
			OnUsageError: onUsage,
		},
		{
			Name:  "log",
			Usage: "print the latest session as a git bisect log, with the evidence of every decision as comments",
			UsageText: "perfbisect log [--repo DIR] [--state-dir DIR] > bisect.log\n\n" +
				"The output can be replayed with git bisect replay bisect.log.",
			Flags:        stateFlags(),
			Action:       noArgs(logAction),
			OnUsageError: onUsage,
		},
		{
			Name:         "reset",
			Usage:        "end the unfinished session (builds and datadir snapshots are kept for later sessions)",
			UsageText:    "perfbisect reset [--repo DIR] [--state-dir DIR]",
			Flags:        stateFlags(),
			Action:       noArgs(resetAction),
			OnUsageError: onUsage,
		},
	}
}

// noArgs refuses arguments to a command that takes none (perfbisect
// status extra), then runs action.
func noArgs(action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usageErr("perfbisect %s takes no arguments (%s): see perfbisect %s --help", c.Command.Name, strings.Join(c.Args().Slice(), " "), c.Command.Name)
		}
		return action(c)
	}
}

func resumeAction(c *cli.Context) error {
	st, dir, err := app.OpenStateStore(c.String("repo"), c.String("state-dir"))
	if err != nil {
		return err
	}
	if st == nil {
		return usageErr("no session in %s (%s; perfbisect start begins one)", dir, whose(c))
	}
	cur, err := app.UnfinishedStart(st)
	st.Close()
	if err != nil {
		return err
	}
	if cur == nil {
		return usageErr("no unfinished session in %s (%s; perfbisect status shows the last one, perfbisect start begins a new one)", dir, whose(c))
	}
	if err := os.Chdir(cur.Dir); err != nil {
		return usageErr("the session was started in %s, which is gone: %v (run its start command again from elsewhere with absolute paths: perfbisect %s)",
			cur.Dir, err, strings.Join(cur.Args, " "))
	}
	again := newApp()
	stored := append([]string{"perfbisect"}, cur.Args...)
	args := append(slices.Clone(stored), "--state-dir", dir)
	// A flag the stored command already sets is not given again: urfave/cli
	// refuses -q and --quiet in one command line.
	for _, f := range []string{"quiet", "no-explain"} {
		if c.Bool(f) && !cliflag.Sets(again, stored, f) {
			args = append(args, "--"+f)
		}
	}
	fmt.Fprintf(os.Stderr, "perfbisect: resuming: %s (in %s)\n", cur.CommandLine(), cur.Dir)
	again.Metadata = map[string]any{resumingKey: true}
	return again.RunContext(c.Context, args)
}

// whose says where the state directory came from: --state-dir, or the
// default one of --repo.
func whose(c *cli.Context) string {
	if c.IsSet("state-dir") {
		return "--state-dir"
	}
	return "the state directory of --repo " + c.String("repo")
}

// loadLatest reads the latest bisection of the state directory the flags
// name and returns that directory; when it holds no bisection, the error
// says so (and what sessions it holds instead: app.OtherSessions).
func loadLatest(c *cli.Context) (*app.Stored, string, error) {
	st, dir, err := app.OpenStateStore(c.String("repo"), c.String("state-dir"))
	if err != nil {
		return nil, dir, err
	}
	others := ""
	var s *app.Stored
	if st != nil {
		defer st.Close()
		if s, err = app.LoadLatest(st); err != nil {
			return nil, dir, err
		}
		others = app.OtherSessions(st)
	}
	switch {
	case s != nil:
		return s, dir, nil
	case others != "":
		return nil, dir, usageErr("no bisection in %s: it holds %s (perfbisect report --list lists them, report N shows one)", dir, others)
	}
	return nil, dir, usageErr("no session in %s (%s; pass the server's tree with --repo, or --state-dir)", dir, whose(c))
}

func statusAction(c *cli.Context) error {
	s, dir, err := loadLatest(c)
	if err != nil {
		return err
	}
	s.WriteStatus(c.App.Writer, dir)
	return nil
}

func logAction(c *cli.Context) error {
	s, _, err := loadLatest(c)
	if err != nil {
		return err
	}
	s.WriteLog(c.App.Writer)
	return nil
}

func markAction(c *cli.Context) error {
	if c.NArg() < 2 {
		return usageErr("mark takes a verdict and revisions: perfbisect mark good|bad|skip REV... [--reason TEXT]")
	}
	verdict, err := app.ParseMark(c.Args().First())
	if err != nil {
		return usageErr("%v (perfbisect mark good|bad|skip REV...)", err)
	}
	dir, err := app.FindStateDir(c.String("repo"), c.String("state-dir"))
	if err != nil {
		return err
	}
	var marks []app.HandMark
	for _, rev := range c.Args().Slice()[1:] {
		marks = append(marks, app.HandMark{Rev: rev, Mark: verdict, Reason: c.String("reason")})
	}
	res, err := app.Mark(dir, marks)
	if err != nil {
		return err
	}
	w := c.App.Writer
	if len(res.Marked) == 0 {
		fmt.Fprintf(w, "session %d: nothing new to mark (every commit named is marked so already)\n", res.Session.ID)
		return nil
	}
	for _, m := range res.Marked {
		fmt.Fprintf(w, "session %d: %.10s marked %s by hand (%s)\n", res.Session.ID, m.Commit, m.Mark, m.Reason)
	}
	if res.Reopened {
		fmt.Fprintf(w, "session %d had ended (%s): it is reopened, and resume goes on from its stored runs\n", res.Session.ID, res.Was)
	}
	fmt.Fprintf(w, "continue with: perfbisect resume %s\n", app.Where(dir, res.Session.Identity().Repo()))
	return nil
}

func resetAction(c *cli.Context) error {
	dir, err := app.FindStateDir(c.String("repo"), c.String("state-dir"))
	if err != nil {
		return err
	}
	cur, err := app.Reset(dir)
	switch {
	case err != nil:
		return err
	case cur == nil:
		fmt.Fprintf(c.App.Writer, "no unfinished session in %s (%s)\n", dir, whose(c))
	default:
		fmt.Fprintf(c.App.Writer, "session %d ended (good %.10s, bad %.10s); builds and datadir snapshots stay in %s\n", cur.ID, cur.Good, cur.Bad, dir)
	}
	return nil
}
