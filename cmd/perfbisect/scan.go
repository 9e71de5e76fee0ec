package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/internal/app"
	"github.com/perfbisect/perfbisect/internal/cliflag"
)

func scanCommand() *cli.Command {
	return &cli.Command{
		Name:  "scan",
		Usage: "measure every Nth commit of a range (or its merges) and say where performance shifted",
		UsageText: "perfbisect scan FROM..TO [--every N | --merges] [--runs N] [--format text|json] [--html FILE] [measurement options]\n\n" +
			"Measures commits of TO's first-parent line back to FROM, finds the shifts of the series with change-point\n" +
			"detection (shifts of at least --threshold) and prints each as a (good, bad) pair with the perfbisect start\n" +
			"command that bisects it. Exits 0 (no regression found), 5 (a regression found), 2 (usage) or 1 (failure).",
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "every", Value: 1, Usage: "measure every Nth commit of the first-parent line (the first and the last always)"},
			&cli.BoolFlag{Name: "merges", Usage: "measure the merge commits of the first-parent line instead of every Nth"},
			&cli.IntFlag{Name: "runs", Value: 3, Usage: "runs per measured commit (in passes over the series, alternately oldest- and newest-first)"},
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text or json"},
			htmlFlag(),
		}, measurementFlags()...),
		Action: scanAction,
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr("%s", flagError(c, err))
		},
	}
}

func scanAction(c *cli.Context) error {
	if c.NArg() != 1 || !strings.Contains(c.Args().First(), "..") {
		return usageErr("scan needs one range FROM..TO (e.g. mariadb-10.0.22..mariadb-10.0.26); got %q", strings.Join(c.Args().Slice(), " "))
	}
	req := app.ScanRequest{Range: c.Args().First(), Every: c.Int("every"), EverySet: c.IsSet("every"), Merges: c.Bool("merges"),
		Runs: c.Int("runs"), StateDir: c.String("state-dir"), Args: append([]string{"scan"}, c.Args().Slice()...),
		StartFlags: forwardedFlags(c)}
	if err := req.Check(); err != nil {
		return err
	}
	if f := c.String("format"); f != "text" && f != "json" {
		return usageErr("--format %q: want text or json", f)
	}
	out, err := output(c, "perfbisect scan "+c.Args().First())
	if err != nil {
		return err
	}
	if c.String("find") != "regression" {
		return usageErr("--find %q: scan reports shifts in both directions; it takes no --find", c.String("find"))
	}
	su, err := newSetup(c)
	if err != nil {
		return err
	}
	defer su.close()
	doc, id, err := app.Scan(c.Context, su.Setup, req)
	return su.WriteScanResult(out, doc, id, err)
}

// forwardedFlags returns the measurement flags the user gave scan, as a
// perfbisect start command takes them (scan's own flags left out).
func forwardedFlags(c *cli.Context) []string {
	var out []string
	for _, f := range measurementFlags() {
		name := f.Names()[0]
		if !c.IsSet(name) || name == "find" {
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
		out = append(out, "--"+name, cliflag.ShellQuote(v))
	}
	return out
}
