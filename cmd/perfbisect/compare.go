package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/internal/app"
	"github.com/perfbisect/perfbisect/internal/cliflag"
)

func compareCommand() *cli.Command {
	return &cli.Command{
		Name:  "compare",
		Usage: "measure sides head to head and say whether any is slower than the first (for CI)",
		UsageText: "perfbisect compare BASE SIDE [SIDE...] [--my-cnf FILE]... [--format text|markdown|json|junit] [--output FILE] [measurement options]\n\n" +
			"A side is a revision of --repo (HEAD, mariadb-10.0.23), DIR:REV (a revision of the git tree DIR), or the\n" +
			"directory of an installed server (/usr); --my-cnf given once applies to every side, given once per side\n" +
			"gives each its own, in order (compare HEAD HEAD --my-cnf off.cnf --my-cnf on.cnf: one build, two files).\n" +
			"Builds each, measures every side against BASE interleaved until they are DIFFERENT or the SAME within\n" +
			"--threshold (or the repeat limit), prints a table per metric and exits 0 (no regression beyond\n" +
			"--threshold), 5 (regression), 4 (inconclusive at --max-repeats), 2 (usage or configuration) or 1 (failure\n" +
			"of the tool or the machine). An interrupted comparison continues where it stopped when run again.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text, markdown (for a pull-request comment), json, or junit (XML for CI test reports)"},
			&cli.StringFlag{Name: "output", Usage: "write the report to this file (written atomically) instead of standard output"},
			htmlFlag(),
			&cli.BoolFlag{Name: "which-setting", Usage: "for one side under two option files: find which of the settings they differ in carries the regression (delta debugging; each test a comparison)"},
			&cli.BoolFlag{Name: "no-explain", Usage: "do not profile the first side found slower (by default up to 3 runs of it and the base, a tenth of the comparison's runs, say why: perfbisect explain; where their servers' settings differ, as many again of the base, the side with the base's values pinned and the side)"},
			&cli.StringFlag{Name: "thread-list", Usage: "compare at each of these client thread counts (1,2,4,8), one row each, like the tables of bug reports; the worst row sets the exit code"},
		}, cliflag.SetUsage(measurementFlags(), map[string]string{
			"max-repeats": "run limit per side (per thread count with --thread-list); still undecided then, the answer is inconclusive (exit 4)",
			"confidence":  "probability of not reporting a regression that is not there (0.95 or 95%); shared by the thread counts of --thread-list",
			"repeats":     "starting runs per side; more are taken, interleaved, until the verdict is clear or --max-repeats",
			"find":        "regression only: compare looks for a regression of HEAD against BASE (swap them to look for a speed-up)",
		})...),
		Action: compareAction,
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr("%s", flagError(c, err))
		},
	}
}

func compareAction(c *cli.Context) error {
	format := c.String("format")
	if !slices.Contains(app.CompareFormats, format) || format == "junit" && c.Bool("which-setting") {
		return usageErr("--format %q: want %s (junit: not with --which-setting)", format, strings.Join(app.CompareFormats, ", "))
	}
	out, err := output(c, "perfbisect compare "+strings.Join(c.Args().Slice(), " "))
	if err != nil {
		return err
	}
	var threads []int // nil: --threads
	if tl := c.String("thread-list"); tl != "" {
		if c.IsSet("threads") {
			return usageErr("--threads %d and --thread-list %s: give one (--thread-list compares at each count, --threads at one)", c.Int("threads"), tl)
		}
		if threads, err = cliflag.ThreadList(tl); err != nil {
			return err
		}
	}
	su, err := newSetup(c)
	if err != nil {
		return err
	}
	defer su.close()
	req := app.CompareRequest{Sides: c.Args().Slice(), Threads: threads, StateDir: c.String("state-dir"), Args: startArgs(c), NoExplain: c.Bool("no-explain")}
	if c.Bool("which-setting") {
		doc, _, outcome := app.WhichSetting(c.Context, su.Setup, req)
		if err := su.WriteSettings(out, doc); err != nil {
			return err
		}
		return outcome
	}
	docs, ids, outcome := app.Compare(c.Context, su.Setup, req)
	if docs == nil {
		return outcome // refused before any comparison
	}
	if err := su.WriteComparisons(out, docs, ids); err != nil {
		return err
	}
	return outcome
}
