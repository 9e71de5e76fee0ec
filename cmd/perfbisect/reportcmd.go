package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/internal/app"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:  "report",
		Usage: "print a stored session again (a bisection, a comparison or a scan), or list them",
		UsageText: "perfbisect report [SESSION] [--format text|markdown|json|junit] [--html FILE] [--list] [--repo DIR] [--state-dir DIR]\n\n" +
			"SESSION is a session number from --list; without it, the newest finished session.\n" +
			"--html writes the session (a bisection, a comparison or a scan) as one self-contained page instead of printing it.",
		Flags: append(stateFlags(),
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text, markdown, json; junit for comparisons"},
			&cli.BoolFlag{Name: "list", Usage: "list the stored sessions"},
			reportHTMLFlag(),
		),
		Action: reportAction,
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr("%s", flagError(c, err))
		},
	}
}

func reportAction(c *cli.Context) error {
	if c.NArg() > 1 {
		return usageErr("report takes at most one session number (got %q)", strings.Join(c.Args().Slice(), " "))
	}
	format := c.String("format")
	if !slices.Contains(app.CompareFormats, format) {
		return usageErr("--format %q: want %s", format, strings.Join(app.CompareFormats, ", "))
	}
	if _, err := output(c, ""); err != nil {
		return err
	}
	st, dir, err := app.OpenStateStore(c.String("repo"), c.String("state-dir"))
	if err != nil {
		return err
	}
	if st == nil {
		return usageErr("no sessions in %s (pass the server's tree with --repo, or --state-dir)", dir)
	}
	defer st.Close()
	w := c.App.Writer
	all, err := app.Sessions(st)
	if err != nil {
		return err
	}
	if c.Bool("list") {
		return app.WriteSessionList(w, all)
	}
	sess, err := app.ChooseSession(all, c.Args().First(), dir)
	if err != nil {
		return err
	}
	if len(sess.Result) == 0 || string(sess.Result) == "null" {
		return usageErr("session %d (%s) has no report yet: it is %s (perfbisect status shows a running bisection)", sess.ID, sess.Kind, sess.State)
	}
	if h := c.String("html"); h != "" {
		return app.WriteStoredHTML(w, st, sess, h)
	}
	return app.RenderStored(w, st, sess, format)
}
