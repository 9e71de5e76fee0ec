package main

import "github.com/perfbisect/perfbisect/internal/cliflag"

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
var flagDocs = cliflag.DocTable(map[string][2]string{
	"repo": {catRevisions, "DIR"}, "good": {catRevisions, "REV"}, "bad": {catRevisions, "REV"},
	"first-parent": {catRevisions, ""}, "keep-doc-commits": {catRevisions, ""}, "every": {catRevisions, "N"}, "merges": {catRevisions, ""},

	"workload": {catWorkload, "NAME"}, "warehouses": {catWorkload, "N"}, "threads": {catWorkload, "N"}, "tables": {catWorkload, "N"}, "table-size": {catWorkload, "ROWS"},
	"time": {catWorkload, "SECONDS"}, "warmup": {catWorkload, "SECONDS"}, "range-size": {catWorkload, "ROWS"},
	"rand-type": {catWorkload, "DIST"}, "rand-seed": {catWorkload, "N"}, "workload-options": {catWorkload, "\"OPTIONS\""},
	"driver": {catWorkload, "builtin|sysbench"}, "sysbench-path": {catWorkload, "PATH"}, "thread-list": {catWorkload, "N,N,..."},

	"my-cnf": {catServer, "FILE"}, "server-cpus": {catServer, "CPUS"}, "client-cpus": {catServer, "CPUS"},
	"fresh-datadir": {catServer, ""}, "start-timeout": {catServer, "DURATION"}, "snapshot-cache-size": {catServer, "SIZE"},

	"repeats": {catDecisions, "N"}, "max-repeats": {catDecisions, "N"}, "threshold": {catDecisions, "PCT"},
	"confidence": {catDecisions, "P"}, "metric": {catDecisions, "METRIC"}, "find": {catDecisions, "regression|improvement"},
	"search": {catDecisions, "bayes|classic"}, "max-runs": {catDecisions, "N"}, "jobs": {catDecisions, "K"},
	"no-confirm": {catDecisions, ""}, "no-explain": {catOutput, ""}, "explain-runs": {catOutput, "N"}, "runs": {catDecisions, "N"}, "call-graph": {catDecisions, "dwarf|fp"},

	"preset": {catBuild, "NAME"}, "cmake-args": {catBuild, "\"ARGS\""}, "build-cmd": {catBuild, "\"COMMAND\""},
	"install-cmd": {catBuild, "\"COMMAND\""}, "build-jobs": {catBuild, "N"}, "build-timeout": {catBuild, "DURATION"},
	"build-cache-size": {catBuild, "SIZE"}, "distcc-hosts": {catBuild, "\"HOSTS\""}, "icecc": {catBuild, ""}, "shared-cache": {catBuild, "DIR|URL"}, "binaries": {catBuild, "DIR"}, "no-ccache": {catBuild, ""},
	"retry-failed-builds": {catBuild, ""}, "layouts": {catBuild, "run|K"},

	"reason":    {catRevisions, "TEXT"},
	"state-dir": {catOutput, "DIR"}, "json": {catOutput, "FILE"}, "html": {catOutput, "FILE"}, "output": {catOutput, "FILE"},
	"format": {catOutput, "FORMAT"}, "out": {catOutput, "DIR"}, "quiet": {catOutput, ""}, "verbose": {catOutput, ""}, "list": {catOutput, ""},
})
