package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// flagDoc is how a flag is shown in --help: its category and the name of
// its value.
type flagDoc struct {
	category    string
	placeholder string
}

// Help categories of the flags, numbered in the order a user needs them
// (urfave/cli sorts categories by name).
const (
	catRevisions = "1. Revisions and repository"
	catWorkload  = "2. Workload (sysbench's names and defaults)"
	catServer    = "3. Server"
	catDecisions = "4. Decisions"
	catBuild     = "5. Build"
	catOutput    = "6. Output and state"
)

// flagDocs are the categories and value names of the commands' flags, by
// flag name (a flag not listed keeps no category and shows "value").
var flagDocs = map[string]flagDoc{
	"repo": {catRevisions, "DIR"}, "good": {catRevisions, "REV"}, "bad": {catRevisions, "REV"},
	"first-parent": {catRevisions, ""}, "every": {catRevisions, "N"}, "merges": {catRevisions, ""},

	"workload": {catWorkload, "NAME"}, "threads": {catWorkload, "N"}, "tables": {catWorkload, "N"}, "table-size": {catWorkload, "ROWS"},
	"time": {catWorkload, "SECONDS"}, "warmup": {catWorkload, "SECONDS"}, "range-size": {catWorkload, "ROWS"},
	"rand-type": {catWorkload, "DIST"}, "rand-seed": {catWorkload, "N"}, "workload-options": {catWorkload, "\"OPTIONS\""},
	"driver": {catWorkload, "builtin|sysbench"}, "sysbench-path": {catWorkload, "PATH"}, "thread-list": {catWorkload, "N,N,..."},

	"my-cnf": {catServer, "FILE"}, "server-cpus": {catServer, "CPUS"}, "client-cpus": {catServer, "CPUS"},
	"fresh-datadir": {catServer, ""}, "start-timeout": {catServer, "DURATION"}, "snapshot-cache-size": {catServer, "SIZE"},

	"repeats": {catDecisions, "N"}, "max-repeats": {catDecisions, "N"}, "threshold": {catDecisions, "PCT"},
	"confidence": {catDecisions, "P"}, "metric": {catDecisions, "METRIC"}, "find": {catDecisions, "regression|improvement"},
	"search": {catDecisions, "bayes|classic"}, "max-runs": {catDecisions, "N"}, "jobs": {catDecisions, "K"},
	"no-confirm": {catDecisions, ""}, "runs": {catDecisions, "N"},

	"preset": {catBuild, "NAME"}, "cmake-args": {catBuild, "\"ARGS\""}, "build-cmd": {catBuild, "\"COMMAND\""},
	"install-cmd": {catBuild, "\"COMMAND\""}, "build-jobs": {catBuild, "N"}, "build-timeout": {catBuild, "DURATION"},
	"build-cache-size": {catBuild, "SIZE"}, "distcc-hosts": {catBuild, "\"HOSTS\""}, "no-ccache": {catBuild, ""},
	"retry-failed-builds": {catBuild, ""},

	"reason":    {catRevisions, "TEXT"},
	"state-dir": {catOutput, "DIR"}, "json": {catOutput, "FILE"}, "html": {catOutput, "FILE"}, "output": {catOutput, "FILE"},
	"format": {catOutput, "FORMAT"}, "quiet": {catOutput, ""}, "verbose": {catOutput, ""}, "list": {catOutput, ""},
}

// decorateFlags puts the flags of cmds (bench excepted: it has sysbench's
// own command line) into their help categories.
func decorateFlags(cmds []*cli.Command) {
	for _, cmd := range cmds {
		if cmd.Name == "bench" || cmd.Name == "simulate" {
			continue
		}
		for _, f := range cmd.Flags {
			d, ok := flagDocs[f.Names()[0]]
			if !ok {
				continue
			}
			switch f := f.(type) {
			case *cli.StringFlag:
				f.Category = d.category
			case *cli.IntFlag:
				f.Category = d.category
			case *cli.Int64Flag:
				f.Category = d.category
			case *cli.Float64Flag:
				f.Category = d.category
			case *cli.BoolFlag:
				f.Category = d.category
			}
		}
	}
}

// defaultFlagStringer is urfave/cli's, which names every value "value".
var defaultFlagStringer = cli.FlagStringer

// flagString shows a flag with its value's name ("--my-cnf FILE") instead of
// "value", and a switch without "(default: false)".
func flagString(f cli.Flag) string {
	s := strings.TrimSuffix(defaultFlagStringer(f), " (default: false)")
	d, ok := flagDocs[f.Names()[0]]
	if !ok || d.placeholder == "" {
		return s
	}
	head, tail, found := strings.Cut(s, "\t")
	if !found {
		return s
	}
	return strings.ReplaceAll(head, " value", " "+d.placeholder) + "\t" + tail
}
