package main

import (
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/internal/app"
)

// buildCommand builds revisions into the state directory's build cache, as a
// bisection would, and prints each one's install prefix: to fill the cache
// ahead of a session (a clean build of a real server takes tens of minutes),
// to check a recipe, or from a script.
func buildCommand() *cli.Command {
	return &cli.Command{
		Name:  "build",
		Usage: "build revisions into the build cache (as start would) and print each install prefix",
		UsageText: "perfbisect build [--repo DIR] [--preset auto] [--cmake-args ARGS] [options] REV...\n\n" +
			"Prints one line per revision: the full commit hash, a tab, the install prefix (or \"failed\").\n" +
			"Exit status 0 when every revision built, 1 when one did not.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "repo", Value: ".", Usage: "the server's git source tree"},
			&cli.StringFlag{Name: "state-dir", Usage: "where builds are cached (default: the user's cache dir, per repository; the same as start's)"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress lines on stderr"},
		}, buildFlags()...),
		Action: buildAction,
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr("%s", flagError(c, err))
		},
	}
}

func buildAction(c *cli.Context) error {
	if c.NArg() == 0 {
		return usageErr("name at least one revision to build (tag, branch, hash or version)")
	}
	settings, err := app.ParseBuildSettings(buildRequest(c))
	if err != nil {
		return err
	}
	// Plain progress lines (a line per quarter of each build step): the bar
	// counts measured runs, which build has none of.
	var log, warn io.Writer = os.Stderr, nil
	if c.Bool("quiet") {
		log, warn = io.Discard, os.Stderr // the machine's problems are still said
	}
	return app.BuildRevisions(c.Context, app.BuildRevisionsRequest{Repo: c.String("repo"), Refs: c.Args().Slice(), Settings: settings,
		StateDir: c.String("state-dir"), Out: c.App.Writer, Log: log, Warn: warn})
}
