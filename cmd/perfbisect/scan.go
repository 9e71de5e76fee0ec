package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/scan"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/stats"
)

func scanCommand() *cli.Command {
	return &cli.Command{
		Name:  "scan",
		Usage: "measure every Nth commit of a range (or its merges) and say where performance shifted",
		UsageText: "perfbisect scan FROM..TO [--every N | --merges] [--runs N] [--format text|json] [measurement options]\n\n" +
			"Measures commits of TO's first-parent line back to FROM, finds the shifts of the series with change-point\n" +
			"detection (shifts of at least --threshold) and prints each as a (good, bad) pair with the perfbisect start\n" +
			"command that bisects it. Exits 0 (no regression found), 5 (a regression found), 2 (usage) or 1 (failure).",
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "every", Value: 1, Usage: "measure every Nth commit of the first-parent line (the first and the last always)"},
			&cli.BoolFlag{Name: "merges", Usage: "measure the merge commits of the first-parent line instead of every Nth"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "runs per measured commit (in passes over the series, alternately oldest- and newest-first)"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text or json"},
		}, measurementFlags()...),
		Action: scanAction,
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr("%v (see perfbisect scan --help)", err)
		},
	}
}

func scanAction(c *cli.Context) error {
	ctx := c.Context
	if c.NArg() != 1 || !strings.Contains(c.Args().First(), "..") {
		return usageErr("scan needs one range FROM..TO (e.g. mariadb-10.0.22..mariadb-10.0.26); got %q", strings.Join(c.Args().Slice(), " "))
	}
	if c.Int("every") < 1 || c.Int("runs") < 1 || c.Int("runs") > 100 {
		return usageErr("--every %d, --runs %d: want --every >= 1 and 1 <= --runs <= 100", c.Int("every"), c.Int("runs"))
	}
	if c.IsSet("every") && c.Bool("merges") {
		return usageErr("--every and --merges: choose one")
	}
	if f := c.String("format"); f != "text" && f != "json" {
		return usageErr("--format %q: want text or json", f)
	}
	su, err := newSetup(c)
	if err != nil {
		return err
	}
	defer su.close()
	fromRef, toRef, _ := strings.Cut(c.Args().First(), "..")
	from, err := bisect.Resolve(su.repo, fromRef)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("FROM: %w", err)}
	}
	to, err := bisect.Resolve(su.repo, toRef)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("TO: %w", err)}
	}
	commits, err := bisect.Range(su.repo, from, to)
	if err != nil {
		code := exitFailure
		if errors.Is(err, bisect.ErrUsage) {
			code = exitUsage
		}
		return &exitError{code: code, err: err}
	}
	line, err := scan.FirstParentLine(commits, from, to)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	picked := scan.Pick(line, c.Int("every"), c.Bool("merges"))
	if len(picked) < 6 {
		fmt.Fprintf(os.Stderr, "perfbisect: note: %d commits to measure; change-point detection needs %d on each side of a shift\n", len(picked), stats.DefaultChangePointMinSegment)
	}
	if err := su.lockState(c); err != nil {
		return err
	}
	var points []string
	for _, p := range picked {
		points = append(points, p.Hash)
	}
	metric := su.policy.Metric
	fmt.Fprintf(su.progress, "scanning %d of %d commits from %.10s to %.10s, %d runs each; state in %s\n", len(points), len(line), from, to, c.Int("runs"), su.stateDir)
	identity := su.identity(from, to, map[string]string{"command": "scan", "repo": su.repoRoot,
		"every": fmt.Sprint(c.Int("every")), "merges": fmt.Sprint(c.Bool("merges")), "runs": fmt.Sprint(c.Int("runs"))})
	dir, _ := os.Getwd()
	sess, err := su.store.Begin(store.KindScan, key(identity), append([]string{"scan"}, c.Args().Slice()...), dir, from, to, identity)
	if err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	m := su.measurer(func() int64 { return sess.ID })
	res, err := scan.Scan(ctx, m, points, c.Int("runs"), metric, stats.ChangePointOptions{MinMagnitude: su.policy.Threshold})
	state, outcome := store.Done, "no-change"
	switch {
	case err != nil:
		state, outcome = store.Failed, "error"
	case len(res.Changes) > 0:
		outcome = "changes"
	}
	if eerr := su.store.End(sess.ID, state, outcome, res); eerr != nil {
		fmt.Fprintf(os.Stderr, "perfbisect: %v\n", eerr)
	}
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: exitInterrupted, err: errors.New("interrupted; no server left running")}
		}
		if errors.Is(err, bisect.ErrUsage) {
			return &exitError{code: exitUsage, err: err}
		}
		return &exitError{code: exitFailure, err: err}
	}
	startCmd := func(ch scan.Change) string {
		return fmt.Sprintf("perfbisect start --good %.12s --bad %.12s %s", ch.Good, ch.Bad, strings.Join(forwardedFlags(c), " "))
	}
	regression := false
	for _, ch := range res.Changes {
		regression = regression || ch.Regression
	}
	if c.String("format") == "json" {
		type change struct {
			scan.Change
			Start string `json:"start_command"`
		}
		doc := struct {
			From, To string
			Metric   string
			Points   []scan.Point
			Changes  []change
		}{From: from, To: to, Metric: string(metric), Points: res.Points, Changes: []change{}}
		for _, ch := range res.Changes {
			doc.Changes = append(doc.Changes, change{ch, startCmd(ch)})
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return &exitError{code: exitFailure, err: err}
		}
	} else {
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "commit\tsubject\tn\tmedian %s\n", metric)
		for _, p := range res.Points {
			med := "skip: " + p.Skip
			if p.Skip == "" {
				med = fmt.Sprintf("%.4g", stats.Median(p.Values))
			}
			fmt.Fprintf(tw, "%.10s\t%.40s\t%d\t%s\n", p.Commit, bisect.Subject(su.repo, p.Commit), len(p.Values), med)
		}
		tw.Flush()
		if len(res.Changes) == 0 {
			fmt.Fprintf(os.Stdout, "\nno shift of %s by %.1f%% or more found\n", metric, 100*su.policy.Threshold)
		}
		for _, ch := range res.Changes {
			kind := "improvement"
			if ch.Regression {
				kind = "regression"
			}
			fmt.Fprintf(os.Stdout, "\n%s %+.1f%% between %.10s (median %.4g) and %.10s (median %.4g), p=%.2g\n  bisect it: %s\n",
				kind, 100*ch.RelChange, ch.Good, ch.Before, ch.Bad, ch.After, ch.P, startCmd(ch))
		}
	}
	if regression {
		return &exitError{code: exitRegression, verdict: true}
	}
	return nil
}

// forwardedFlags returns the measurement flags the user gave scan, as a
// perfbisect start command takes them (scan's own flags left out).
func forwardedFlags(c *cli.Context) []string {
	var out []string
	for _, f := range measurementFlags() {
		name := f.Names()[0]
		if !c.IsSet(name) {
			continue
		}
		if _, ok := f.(*cli.BoolFlag); ok {
			out = append(out, "--"+name)
			continue
		}
		v := c.String(name)
		if _, ok := f.(*cli.IntFlag); ok {
			v = fmt.Sprint(c.Int(name))
		} else if _, ok := f.(*cli.Int64Flag); ok {
			v = fmt.Sprint(c.Int64(name))
		} else if _, ok := f.(*cli.Float64Flag); ok {
			v = fmt.Sprint(c.Float64(name))
		}
		out = append(out, "--"+name, shellQuote(v))
	}
	return out
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == '=' || r == ':' || r == ',' || r == '%' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
