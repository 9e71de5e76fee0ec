package main

import (
	"io"
	"os"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/internal/app"
	"github.com/perfbisect/perfbisect/internal/cliflag"
	"github.com/perfbisect/perfbisect/internal/termprogress"
)

// setup is app.Setup on the terminal: its Stdout (where tables and answers
// go) is os.Stdout, wrapped by the progress bar when both are the terminal;
// its Live is the progress bar on a terminal (none elsewhere or with
// --quiet).
type setup struct {
	*app.Setup
}

// color reports whether tables on stdout may use colours: stdout is a
// terminal and NO_COLOR (no-color.org) is not set.
func (s *setup) color() bool {
	return termprogress.IsTerminal(os.Stdout) && os.Getenv("NO_COLOR") == ""
}

// close removes the progress bar and releases the store and the state
// directory's lock.
func (s *setup) close() {
	s.EndProgress()
	s.Setup.Close()
}

// newTerminalSetup is a setup whose progress goes to stderr (nowhere when
// quiet), through a progress bar when stderr is a terminal, and whose
// answers go to stdout (through the bar when both are the terminal).
func newTerminalSetup(quiet bool) *setup {
	s := &setup{Setup: &app.Setup{Log: os.Stderr, Stdout: os.Stdout, Stderr: os.Stderr}}
	switch {
	case quiet:
		s.Log = io.Discard
	case termprogress.IsTerminal(os.Stderr):
		live := termprogress.New(os.Stderr)
		s.Live = live // only when there is one: a nil *termprogress.Bar is not a nil Live
		s.Log = live.Writer(os.Stderr)
		if termprogress.IsTerminal(os.Stdout) {
			s.Stdout = live.Writer(os.Stdout)
		}
	}
	return s
}

// newSetup checks every measurement flag (a bad one is a one-line exit-2 error,
// before any build) and opens the repository (app.Setup.Configure). It does
// not touch the state directory; lockState does.
func newSetup(c *cli.Context) (*setup, error) {
	s := newTerminalSetup(c.Bool("quiet"))
	s.Version = c.App.Version
	err := s.Configure(c.Context, app.SetupRequest{
		Repo: c.String("repo"), MyCnf: c.StringSlice("my-cnf"), MyCnfPerSide: c.Command.Name == "compare" || c.Command.Name == "explain",
		Reports: map[string]string{"html": c.String("html"), "json": c.String("json"), "output": c.String("output")},
		Workload: app.WorkloadRequest{Name: c.String("workload"), Threads: c.Int("threads"), Tables: c.Int("tables"),
			TableSize: c.Int("table-size"), Time: c.String("time"), Warmup: c.String("warmup"), RangeSize: c.Int("range-size"),
			RandType: c.String("rand-type"), RandSeed: c.Int64("rand-seed"), Options: c.String("workload-options"),
			Warehouses: c.Int("warehouses"), Given: cliflag.Given(c, "tables", "table-size", "range-size", "rand-type", "driver", "warehouses")},
		Driver: c.String("driver"), SysbenchPath: c.String("sysbench-path"),
		ServerCPUs: c.String("server-cpus"), ClientCPUs: c.String("client-cpus"),
		SnapshotCacheSize: c.String("snapshot-cache-size"), FreshDatadir: c.Bool("fresh-datadir"), StartTimeout: c.String("start-timeout"),
		Repeats: c.Int("repeats"), MaxRepeats: c.Int("max-repeats"), Threshold: c.String("threshold"),
		Confidence: c.String("confidence"), Metric: c.String("metric"), MetricSet: c.IsSet("metric"), Find: c.String("find"),
		Search: searchRequest(c), Build: buildRequest(c), Runners: c.StringSlice("runner"),
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// searchRequest reads start's search flags as typed; nil for a command
// without them.
func searchRequest(c *cli.Context) *app.SearchRequest {
	if !slices.ContainsFunc(c.Command.Flags, func(f cli.Flag) bool { return f.Names()[0] == "search" }) {
		return nil
	}
	return &app.SearchRequest{Search: c.String("search"), Jobs: c.Int("jobs"), MaxRuns: c.Int("max-runs"),
		SearchSet: c.IsSet("search"), ConfidenceSet: c.IsSet("confidence"), MaxRepeatsSet: c.IsSet("max-repeats")}
}

// buildRequest reads the build flags (buildFlags) as typed.
func buildRequest(c *cli.Context) app.BuildRequest {
	return app.BuildRequest{Preset: c.String("preset"), PresetSet: c.IsSet("preset"), CMakeArgs: c.String("cmake-args"),
		BuildCmd: c.String("build-cmd"), InstallCmd: c.String("install-cmd"), Jobs: c.Int("build-jobs"),
		Timeout: c.String("build-timeout"), CacheSize: c.String("build-cache-size"), DistccHosts: c.String("distcc-hosts"), Icecc: c.Bool("icecc"), SharedCache: c.String("shared-cache"), Binaries: c.String("binaries"),
		NoCcache: c.Bool("no-ccache"), Verbose: c.Bool("verbose"), Retry: c.Bool("retry-failed-builds"), Layouts: c.String("layouts")}
}
