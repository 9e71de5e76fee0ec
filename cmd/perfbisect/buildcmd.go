package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/build"
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
	settings, err := parseBuildFlags(c)
	if err != nil {
		return err
	}
	repo, err := bisect.OpenRepo(c.String("repo"))
	if err != nil {
		return app.With(app.Usage, err)
	}
	var commits []string
	for _, ref := range c.Args().Slice() {
		h, err := bisect.Resolve(repo, ref)
		if err != nil {
			return app.With(app.Usage, err)
		}
		commits = append(commits, h)
	}
	root, _ := filepath.Abs(c.String("repo"))
	if wt, err := repo.Worktree(); err == nil {
		root = wt.Filesystem.Root()
	}
	dir, err := app.MakeStateDir(c.String("state-dir"), root)
	if err != nil {
		return err
	}
	unlock, err := app.LockAndReap(dir, os.Stderr)
	if err != nil {
		return err
	}
	defer unlock()
	// Plain progress lines (a line per quarter of each build step): the bar
	// counts measured runs, which build has none of.
	var log io.Writer = os.Stderr
	if c.Bool("quiet") {
		log = io.Discard
	}
	b := settings.Builder(repo, dir, log, nil)
	failed := 0
	for _, commit := range commits {
		prefix, err := b.Build(c.Context, commit)
		var be *build.BuildError
		switch {
		case err == nil:
			fmt.Fprintf(c.App.Writer, "%s\t%s\n", commit, prefix)
		case errors.As(err, &be) && !be.Machine:
			failed++
			fmt.Fprintf(c.App.Writer, "%s\tfailed\n", commit)
			printError(err)
		default:
			if c.Context.Err() != nil {
				return c.Context.Err()
			}
			return app.With(app.Failure, err)
		}
	}
	if failed > 0 {
		return app.With(app.Failure, fmt.Errorf("%d of %d revision(s) did not build", failed, len(commits)))
	}
	return nil
}
