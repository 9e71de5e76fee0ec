package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/internal/app"
	"github.com/perfbisect/perfbisect/internal/cliflag"
	"github.com/perfbisect/perfbisect/serverctl"
	"github.com/perfbisect/perfbisect/stats"
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

// flagsFirst moves the positional arguments of compare, scan, report and build after their
// flags, so
// that "perfbisect compare origin/main HEAD --format markdown" works as users
// write it (urfave/cli v2 stops parsing flags at the first argument). A flag's
// value is the next argument unless the flag is boolean or written
// --flag=value; everything after "--" stays positional.
func flagsFirst(cliApp *cli.App, args []string) []string {
	if len(args) < 2 || args[1] != "compare" && args[1] != "scan" && args[1] != "report" && args[1] != "build" {
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
	ctx := c.Context
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
	base, err := bisect.Resolve(su.Repo, c.Args().Get(0))
	if err != nil {
		return app.With(app.Usage, fmt.Errorf("BASE: %w", err))
	}
	head, err := bisect.Resolve(su.Repo, c.Args().Get(1))
	if err != nil {
		return app.With(app.Usage, fmt.Errorf("HEAD: %w", err))
	}
	if base == head {
		return usageErr("BASE %s and HEAD %s are the same commit %.10s: nothing to compare", c.Args().Get(0), c.Args().Get(1), base)
	}
	if err := su.CheckSettings(base, head); err != nil {
		return err
	}
	cfg := su.Policy
	cfg.Good, cfg.Bad = base, head
	if len(threads) > 1 {
		// The worst row sets the exit code: the thread counts share the
		// error budget (Bonferroni), so that a change that is not there is
		// reported with probability at most 1-confidence over all rows.
		cfg.Confidence = 1 - (1-cfg.Confidence)/float64(len(threads))
	}
	if _, err := session.NewComparison(cfg, nil); err != nil { // every setting checked before a build
		return app.With(app.Usage, err)
	}
	if err := su.Lock(c.String("state-dir")); err != nil {
		return err
	}
	if threads == nil {
		threads = []int{su.Bench.Threads}
	}
	var docs []report.CompareDoc
	var ids []int64
	var runErr error
	code := app.Done
	for _, n := range threads {
		su.Bench.Threads = n
		doc, id, c2, err := compareOnce(ctx, c, su, cfg, base, head)
		docs = append(docs, doc)
		if id > 0 {
			ids = append(ids, id)
		}
		if err != nil {
			runErr = err
			break
		}
		switch {
		case c2 == app.Regression:
			code = app.Regression
		case c2 == app.Undecided && code == app.Done:
			code = app.Undecided
		}
	}
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
	if runErr != nil {
		var ee *session.EndpointError
		switch {
		case ctx.Err() != nil:
			return app.With(app.Interrupted, errors.New("interrupted; no server left running"))
		case errors.As(runErr, &ee):
			which := map[string]string{"good": "BASE", "bad": "HEAD"}[ee.Which]
			return app.With(app.Usage, fmt.Errorf("%s cannot be measured: %w", which, ee.Err))
		case errors.Is(runErr, serverctl.ErrOptionFile):
			return app.With(app.Usage, runErr) // as start: the user's file, not the tool
		default:
			return app.With(app.Failure, runErr)
		}
	}
	if code != app.Done {
		return app.Answer(code)
	}
	return nil
}

// compareOnce runs one comparison (at su.Bench.Threads), stored as its own
// session, and returns its document, the stored session's id (0 when none was
// stored) and its outcome (app.Done, app.Regression or app.Undecided); err
// is the comparison's failure.
func compareOnce(ctx context.Context, c *cli.Context, su *setup, cfg session.Config, base, head string) (report.CompareDoc, int64, app.Outcome, error) {
	st := su.Store
	identity := su.Identity(base, head, map[string]string{"command": "compare", "repo": su.RepoRoot})
	dir, _ := os.Getwd()
	doc := report.CompareDoc{Base: base, Head: head, BaseSubject: bisect.Subject(su.Repo, base), HeadSubject: bisect.Subject(su.Repo, head),
		Metric: string(cfg.Metric), Threshold: cfg.Threshold, Confidence: cfg.Confidence, Threads: su.Bench.Threads,
		Workload: su.WorkloadSummary()}
	sess, err := st.Begin(store.KindCompare, startArgs(c), dir, base, head, identity)
	if err != nil {
		doc.Result, doc.Error = report.CompareError, err.Error()
		return doc, 0, app.Failure, err
	}
	su.StoreSession(&cfg, func() int64 { return sess.ID }, 0, 0, nil)
	s, err := session.NewComparison(cfg, su.Measurer(func() int64 { return sess.ID }))
	if err != nil {
		return doc, sess.ID, app.Usage, err
	}
	fmt.Fprintf(su.Log, "comparing base %.10s with head %.10s (%s, %d threads, threshold %.1f%%); state in %s\n",
		base, head, cfg.Metric, su.Bench.Threads, 100*cfg.Threshold, su.StateDir)
	cmp, changed, runErr := s.Compare(ctx)
	res := s.Result()
	doc.Verdict, doc.BaseRuns, doc.HeadRuns, doc.Finished = cmp.Verdict.String(), res.Runs[base], res.Runs[head], time.Now().UTC()
	code := app.Done
	switch {
	case runErr != nil:
		doc.Result, doc.Error = report.CompareError, runErr.Error()
		if ctx.Err() != nil {
			doc.Error = "interrupted"
		}
	case changed:
		doc.Result, doc.Why, code = report.CompareRegression, fmt.Sprintf("%+.1f%% (%s)", 100*cmp.Shift.Est, cmp.Rule), app.Regression
	case cmp.Verdict == stats.Unknown:
		doc.Result, doc.Why, code = report.CompareInconclusive, fmt.Sprintf("%s; %s", cmp.Rule, cmp.Need), app.Undecided
	default:
		doc.Result, doc.Why = report.CompareNoRegression, fmt.Sprintf("%s %+.1f%% (%s)", cmp.Verdict, 100*cmp.Shift.Est, cmp.Rule)
	}
	if runErr == nil {
		doc.Rows = report.CompareRows(res.Runs[base], res.Runs[head], cfg.Metric, cmp)
	}
	state := store.Done
	if runErr != nil {
		state = store.Failed
	}
	if err := st.End(sess.ID, state, doc.Result, doc); err != nil {
		printError(err)
	}
	return doc, sess.ID, code, runErr
}
