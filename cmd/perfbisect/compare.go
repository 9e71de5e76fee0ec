package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/internal/app"
	"github.com/perfbisect/perfbisect/internal/cliflag"
)

func compareCommand() *cli.Command {
	return &cli.Command{
		Name:  "compare",
		Usage: "measure two revisions head to head and say whether the second is slower (for CI)",
		UsageText: "perfbisect compare BASE HEAD [--format text|markdown|json|junit] [--output FILE] [measurement options]\n\n" +
			"Builds both, measures them interleaved until they are DIFFERENT or the SAME within --threshold (or the\n" +
			"repeat limit), prints a table per metric and exits 0 (no regression beyond --threshold), 5 (regression),\n" +
			"4 (inconclusive at --max-repeats), 2 (usage or configuration) or 1 (failure of the tool or the machine).",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text, markdown (for a pull-request comment), json, or junit (XML for CI test reports)"},
			&cli.StringFlag{Name: "output", Usage: "write the report to this file (written atomically) instead of standard output"},
			htmlFlag(),
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
	if c.NArg() != 2 {
		return usageErr("compare needs two revisions, BASE and HEAD (got %s); e.g. perfbisect compare origin/main HEAD", app.Counted(c.NArg(), "argument"))
	}
	format := c.String("format")
	if !slices.Contains(report.CompareFormats, format) {
		return usageErr("--format %q: want %s", format, strings.Join(report.CompareFormats, ", "))
	}
	if out := c.String("output"); out != "" {
		if err := report.CheckWritable("output", out); err != nil {
			return app.With(app.Usage, err)
		}
	}
	if err := checkHTML(c); err != nil {
		return err
	}
	if c.String("find") != "regression" {
		return usageErr("--find %q: compare looks for a regression of HEAD against BASE (swap them to look for a speed-up)", c.String("find"))
	}
	var threads []int // nil: --threads
	if tl := c.String("thread-list"); tl != "" {
		if c.IsSet("threads") {
			return usageErr("--threads %d and --thread-list %s: give one (--thread-list compares at each count, --threads at one)", c.Int("threads"), tl)
		}
		var err error
		if threads, err = cliflag.ThreadList(tl); err != nil {
			return err
		}
	}
	su, err := newSetup(c)
	if err != nil {
		return err
	}
	defer su.close()
	docs, ids, outcome := app.Compare(c.Context, su.Setup, app.CompareRequest{Base: c.Args().Get(0), Head: c.Args().Get(1), Threads: threads,
		StateDir: c.String("state-dir"), Args: startArgs(c)})
	if docs == nil {
		return outcome // refused before any comparison
	}
	if err := writeComparisons(c, su, format, docs, ids); err != nil {
		return err
	}
	return outcome
}

// writeComparisons writes compare's documents: in --format to --output or
// stdout, the HTML page with --html, and GitHub's workflow annotations
// under GitHub Actions.
func writeComparisons(c *cli.Context, su *setup, format string, docs []report.CompareDoc, ids []int64) error {
	var buf bytes.Buffer
	if err := report.WriteCompareSet(&buf, format, docs); err != nil {
		return app.With(app.Failure, err)
	}
	su.endProgress()
	if out := c.String("output"); out != "" {
		if err := report.WriteFile(out, buf.Bytes()); err != nil {
			return app.With(app.Failure, err)
		}
	} else {
		os.Stdout.Write(buf.Bytes())
	}
	htmlReport(c, su.Store, report.Page{Title: fmt.Sprintf("perfbisect compare %s %s", c.Args().Get(0), c.Args().Get(1)), Compare: docs}, ids...)
	if os.Getenv("GITHUB_ACTIONS") == "true" {
		// Workflow commands on standard output, unless that holds a JSON or
		// JUnit document that must stay valid: then on standard error.
		w := os.Stdout
		if c.String("output") == "" && (format == "json" || format == "junit") {
			w = os.Stderr
		}
		for _, doc := range docs {
			fmt.Fprintln(w, report.GitHubAnnotation(doc))
		}
	}
	return nil
}
