package main

import (
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/internal/app"
)

// htmlFlag is --html of start, compare and scan (report's writes instead
// of printing: reportHTMLFlag).
func htmlFlag() cli.Flag {
	return &cli.StringFlag{Name: "html", Usage: "also write a self-contained HTML report (charts of every run, the decisions, options, builds, host facts) to this file"}
}

// reportHTMLFlag is report's --html.
func reportHTMLFlag() cli.Flag {
	return &cli.StringFlag{Name: "html", Usage: "write the session as a self-contained HTML report (charts of every run, the decisions, options, builds, host facts) to this file instead of printing it"}
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
	if err := app.WriteHTML(path, st, p, ids...); err != nil {
		printError(err)
	}
}
