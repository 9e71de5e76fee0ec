package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/internal/app"
	"github.com/perfbisect/perfbisect/internal/cliflag"
)

func explainCommand() *cli.Command {
	// explain decides nothing: the decisions' flags are hidden.
	flags := cliflag.Hide(measurementFlags(), "repeats", "max-repeats", "threshold", "confidence", "metric", "find")
	return &cli.Command{
		Name:  "explain",
		Usage: "profile two sides and say why the second is slower: CPU or waiting, where the CPU went, which counters and settings changed",
		UsageText: "perfbisect explain BASE SLOWER [--my-cnf FILE]... [--out DIR] [--runs N] [--call-graph dwarf|fp] [--format text|markdown|json] [measurement options]\n\n" +
			"Sides as for compare. Measures --runs runs of each, interleaved, with perf sampling the server's CPU (cpu-clock, call\n" +
			"graphs) and SHOW GLOBAL STATUS and VARIABLES read at both ends of each window; these runs decide no verdict. Writes\n" +
			"base.pb.gz and head.pb.gz (pprof's format: pprof -diff_base base.pb.gz head.pb.gz) into --out. Without perf (apt-get\n" +
			"install linux-perf) or its permission (kernel.perf_event_paranoid), explains with the counters and settings alone.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text, markdown (for a bug report) or json"},
			&cli.StringFlag{Name: "output", Usage: "write the explanation to this file (written atomically) instead of standard output"},
			htmlFlag(),
			&cli.StringFlag{Name: "out", Usage: "new or empty directory for the profiles and the profiled runs' files (default: perfbisect-explain here, or -2, -3 ...: the first that does not exist)"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "profiled runs of each side (at least 2)"},
			&cli.StringFlag{Name: "call-graph", Value: "dwarf", Usage: "perf's call graphs: dwarf (any build with unwind tables) or fp (frame pointers: cheaper, whole stacks only for builds that keep them)"},
		}, flags...),
		Action: explainAction,
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr("%s", flagError(c, err))
		},
	}
}

func explainAction(c *cli.Context) error {
	format := c.String("format")
	if !slices.Contains([]string{"text", "markdown", "json"}, format) {
		return usageErr("--format %q: want text, markdown or json", format)
	}
	out, err := output(c, "perfbisect explain "+strings.Join(c.Args().Slice(), " "))
	if err != nil {
		return err
	}
	su, err := newSetup(c)
	if err != nil {
		return err
	}
	defer su.close()
	doc, err := app.Explain(c.Context, su.Setup, app.ExplainRequest{Sides: c.Args().Slice(), Runs: c.Int("runs"),
		CallGraph: c.String("call-graph"), Out: c.String("out"), StateDir: c.String("state-dir")})
	if doc != nil {
		// Interrupted after the profiled runs: what they explain is kept.
		if werr := su.WriteExplanation(out, doc); err == nil {
			err = werr
		}
	}
	return err
}
