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
		}, measurementFlags()...),
		Action: compareAction,
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr("%s", flagError(c, err))
		},
	}
}

// flagsFirst moves the positional arguments of the commands that take them
// (compare, scan, report, build, mark, replay) after their flags, so that
// "perfbisect compare origin/main HEAD --format markdown" works as users
// write it (urfave/cli v2 stops parsing flags at the first argument). A flag's
// value is the next argument unless the flag is boolean or written
// --flag=value; everything after "--" stays positional.
func flagsFirst(cliApp *cli.App, args []string) []string {
	if len(args) < 2 || !slices.Contains([]string{"compare", "scan", "report", "build", "mark", "replay"}, args[1]) {
		return args
	}
	if args[len(args)-1] == "--generate-bash-completion" {
		return args // shell completion: urfave/cli reads the line as typed
	}
	var cmd *cli.Command
	for _, c := range cliApp.Commands {
		if c.Name == args[1] {
			cmd = c
		}
	}
	boolean := map[string]bool{"help": true, "h": true}
	for _, f := range cmd.Flags {
		if _, ok := f.(*cli.BoolFlag); ok {
			for _, n := range f.Names() {
				boolean[n] = true
			}
		}
	}
	flags, pos := []string{}, []string{}
	rest := args[2:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			pos = append(pos, rest[i+1:]...)
			i = len(rest)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && !boolean[name] {
				if i+1 == len(rest) {
					// A value flag with no value: leave it last, so that
					// the parser says so (it would take "--" for its value).
					return append([]string{args[0], args[1]}, flags...)
				}
				i++
				flags = append(flags, rest[i])
			}
		default:
			pos = append(pos, a)
		}
	}
	out := append(append([]string{args[0], args[1]}, flags...), "--")
	return append(out, pos...)
}

func compareAction(c *cli.Context) error {
	if c.NArg() != 2 {
		return usageErr("compare needs two revisions, BASE and HEAD (got %s); e.g. perfbisect compare origin/main HEAD", plural(c.NArg(), "argument"))
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
