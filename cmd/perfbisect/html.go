package main

import (
	"strings"

	"github.com/urfave/cli/v2"

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

// output is where a command's answer goes, from its flags (--format,
// --output, --html, --json; each "" when the command has none), checked
// (Output.CheckHTML). title is the HTML page's.
func output(c *cli.Context, title string) (app.Output, error) {
	out := app.Output{Format: c.String("format"), Path: c.String("output"), HTML: c.String("html"), JSON: c.String("json"),
		Command: strings.Join(startArgs(c), " "), Title: title}
	return out, out.CheckHTML()
}
