package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/internal/app"
)

// htmlFlag is --html of start, compare, scan and report.
func htmlFlag() cli.Flag {
	return &cli.StringFlag{Name: "html", Usage: "also write a self-contained HTML report (charts of every run, the decisions, options, builds, host facts) to this file"}
}

// checkHTML fails early when --html names a file that cannot be written, or
// the file another output flag of the command (--json, --output) names.
func checkHTML(c *cli.Context) error {
	p := c.String("html")
	if p == "" {
		return nil
	}
	if err := report.CheckWritable("html", p); err != nil {
		return app.With(app.Usage, err)
	}
	abs, _ := filepath.Abs(p)
	for _, other := range []string{"json", "output"} {
		if o := c.String(other); o != "" {
			if oabs, _ := filepath.Abs(o); oabs == abs {
				return usageErr("--html %s and --%s %s name the same file: give each report its own", p, other, o)
			}
		}
	}
	return nil
}

// htmlReport writes the --html page of a measuring command (start, compare,
// scan) that stored sessions ids, with the command line as typed; a failure
// is reported, not fatal: the command's answer stands.
func htmlReport(c *cli.Context, st *store.Store, p report.Page, ids ...int64) {
	path := c.String("html")
	if path == "" {
		return
	}
	p.Command = strings.Join(startArgs(c), " ")
	if err := writeHTML(path, st, p, ids...); err != nil {
		printError(err)
	}
}

// writeHTML completes p with what the store holds for the sessions ids
// (completePage) and writes it to path atomically.
func writeHTML(path string, st *store.Store, p report.Page, ids ...int64) error {
	p, err := completePage(st, p, ids...)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := report.WriteHTML(&buf, p); err != nil {
		return fmt.Errorf("--html %s: %w", path, err)
	}
	return report.WriteFile(path, buf.Bytes())
}

// completePage adds to p what the store holds for the sessions ids: the
// options the server read in the last run of each commit, in the order the
// commits were first measured, and the build attempts. The report writers
// redact secret option values.
func completePage(st *store.Store, p report.Page, ids ...int64) (report.Page, error) {
	seen := map[string]int{}
	for _, id := range ids {
		commits, options, err := st.ServerOptions(id)
		if err != nil {
			return p, err
		}
		for i, commit := range commits {
			text := strings.TrimSpace(options[i]) // report.WriteHTML redacts secrets
			if j, ok := seen[commit]; ok {
				p.Options[j].Text = text
				continue
			}
			seen[commit] = len(p.Options)
			p.Options = append(p.Options, report.OptionsText{Commit: commit, Text: text})
		}
		builds, err := st.Builds(id)
		if err != nil {
			return p, err
		}
		for _, b := range builds {
			f := report.BuildFact{Commit: b.Commit, Seconds: b.Seconds, Flavor: b.Flavor, Version: b.Version, Prefix: b.Prefix, Error: b.Error}
			if len(ids) > 1 && slices.ContainsFunc(p.Builds, func(o report.BuildFact) bool {
				return o.Commit == f.Commit && o.Prefix == f.Prefix && o.Error == f.Error
			}) {
				continue // the same build, reused by the next thread count's comparison
			}
			p.Builds = append(p.Builds, f)
		}
	}
	return p, nil
}
