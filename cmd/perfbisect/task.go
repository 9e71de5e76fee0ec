package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/bisect/runner"
	"github.com/perfbisect/perfbisect/internal/app"
)

// taskCommand is what a runner host runs for a coordinating perfbisect
// (start --runner), over ssh, srun, or any job engine's step.
func taskCommand() *cli.Command {
	root := &cli.StringFlag{Name: "root", Usage: "where this host keeps the install trees it received, its datadir snapshots and its runs (default: the user's cache directory, perfbisect/runner)"}
	return &cli.Command{
		Name:  "task",
		Usage: "a runner host's side of start --runner: measure a task a coordinating perfbisect sends",
		UsageText: "perfbisect task id | has [--root DIR] KEY | receive [--root DIR] KEY | run [--root DIR] [--task FILE]\n\n" +
			"A coordinating perfbisect (start --runner HOST) runs these on each runner host, through ssh\n" +
			"or a job engine (srun, a CI job): id says which perfbisect build and machine this is;\n" +
			"has and receive keep a build's install tree under its key (a content address), sent once;\n" +
			"run reads a task (JSON) on standard input, measures it here and writes the result (JSON) on\n" +
			"standard output, progress on standard error. A task ends when its standard input does.\n" +
			"run exits 0 when it measured the task or found the revision untestable (the result says\n" +
			"which), 2 for a task or settings that are wrong, 1 for this host's machine; the result is\n" +
			"written in every case. docs/runners.md describes the task and the result.\n" +
			"PERFBISECT_MACHINE_LOCK names this host's machine lock when several hosts share a machine.",
		Subcommands: []*cli.Command{
			{
				Name:  "id",
				Usage: "print this perfbisect's build and this machine (JSON)",
				Action: func(c *cli.Context) error {
					id, err := runner.Self(c.App.Version)
					if err != nil {
						return app.With(app.Failure, err)
					}
					return json.NewEncoder(os.Stdout).Encode(id)
				},
			},
			{
				Name:      "has",
				Usage:     "exit 0 when the install tree KEY is here, 1 when not",
				ArgsUsage: "KEY",
				Flags:     []cli.Flag{root},
				Action: withKey("has", func(c *cli.Context, dir, key string) error {
					if !app.HasEntry(dir, key) {
						return app.With(app.Failure, nil) // exit 1, nothing said
					}
					return nil
				}),
			},
			{
				Name:      "receive",
				Usage:     "keep the install tree KEY read on standard input (the archive start --runner sends)",
				ArgsUsage: "KEY",
				Flags:     []cli.Flag{root},
				Action: withKey("receive", func(c *cli.Context, dir, key string) error {
					got, err := app.ReceiveEntry(c.Context, dir, key, os.Stdin)
					if err != nil {
						return app.With(app.Failure, err)
					}
					fmt.Println(got)
					return nil
				}),
			},
			{
				Name:  "run",
				Usage: "measure the task read on standard input (or --task FILE); write its result on standard output",
				Flags: []cli.Flag{root, &cli.StringFlag{Name: "task", Usage: "read the task from this file (a job engine's step) instead of standard input, which then does not end the task"}},
				Action: func(c *cli.Context) error {
					dir, err := taskRoot(c)
					if err != nil {
						return app.With(app.Failure, err)
					}
					if f := c.String("task"); f != "" {
						// A job engine's step: the task from a file, no
						// coordinator holding the input.
						in, err := os.Open(f)
						if err != nil {
							return usageErr("--task: %v", err)
						}
						defer in.Close()
						return app.RunTask(c.Context, dir, c.App.Version, in, nil, os.Stdout, os.Stderr)
					}
					return app.RunTask(c.Context, dir, c.App.Version, os.Stdin, os.Stdin, os.Stdout, os.Stderr)
				},
			},
		},
	}
}

// taskRoot is the task command's --root, or its default.
func taskRoot(c *cli.Context) (string, error) {
	if r := c.String("root"); r != "" {
		return r, nil
	}
	return app.DefaultRunnerRoot()
}

// withKey is the action of a task command that takes one KEY (has,
// receive): f gets the root and the key.
func withKey(name string, f func(c *cli.Context, dir, key string) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.NArg() != 1 {
			return usageErr("task %s takes one key (perfbisect task %s [--root DIR] KEY)", name, name)
		}
		dir, err := taskRoot(c)
		if err != nil {
			return app.With(app.Failure, err)
		}
		return f(c, dir, c.Args().First())
	}
}
