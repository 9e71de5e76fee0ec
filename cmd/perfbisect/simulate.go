package main

import (
	"runtime"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/internal/app"
)

func simulateCommand() *cli.Command {
	return &cli.Command{
		Name:  "simulate",
		Usage: "run the real search and decisions on simulated histories and print how often the answer is right",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "sessions", Value: 500, Usage: "simulated sessions"},
			&cli.IntFlag{Name: "commits", Value: 40, Usage: "commits between good and bad"},
			&cli.StringFlag{Name: "culprit-pos", Value: "24", Usage: "position of the culprit (0: nothing regressed), or random: drawn uniformly from 1 to --commits per session"},
			&cli.BoolFlag{Name: "merges", Usage: "a history with side branches (every fifth mainline commit merges a branch of two) instead of a line"},
			&cli.Float64Flag{Name: "change", Value: -40, Usage: "the culprit's change of tps, in percent"},
			&cli.Float64Flag{Name: "cv", Value: 5, Usage: "per-run noise (coefficient of variation), in percent"},
			&cli.Float64Flag{Name: "drift", Value: 0, Usage: "machine drift per run, in percent (e.g. -0.05)"},
			&cli.IntSliceFlag{Name: "broken", Usage: "positions that do not build"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed"},
			&cli.IntFlag{Name: "repeats", Value: 6, Usage: "as for start"},
			&cli.IntFlag{Name: "max-repeats", Value: 18, Usage: "as for start"},
			&cli.StringFlag{Name: "threshold", Value: "5", Usage: "as for start, in percent"},
			&cli.StringFlag{Name: "confidence", Value: "0.95", Usage: "as for start: 0.95 or 95% (with --search bayes: 0.99 unless set)"},
			&cli.StringFlag{Name: "search", Value: app.SearchBayes, Usage: "as for start: bayes or classic"},
			&cli.IntFlag{Name: "max-runs", Usage: "as for start"},
			&cli.StringFlag{Name: "noise", Value: "lognormal", Usage: "shape of the noise: lognormal, normal, t3 (heavy tails), outliers (one run in 20 a 20-50% slower hiccup) or bimodal (one run in five 15% slow)"},
			&cli.IntFlag{Name: "step-at", Usage: "from this run on the machine is --step-factor times as fast (0: never)"},
			&cli.Float64Flag{Name: "step-factor", Value: 0.9, Usage: "see --step-at"},
			&cli.Float64Flag{Name: "flaky", Usage: "share of runs that fail through no fault of the revision, in percent (each attempt independently)"},
			&cli.Float64Flag{Name: "build-effect", Usage: "spread of a per-build level, in percent: each commit's runs sit at its own level, drawn once per commit (code layout), the endpoints' too; the search is told it, as a calibration would"},
			&cli.BoolFlag{Name: "build-effect-unknown", Usage: "with --build-effect: the search is not told the spread"},
			&cli.StringFlag{Name: "layouts", Value: "1", Usage: "with --build-effect: code layouts per build, each its own level (the build's objects relinked in K random orders, runs rotating over them), or run: a new layout for every run"},
			&cli.IntFlag{Name: "second-pos", Usage: "position of a second culprit (0: none)"},
			&cli.Float64Flag{Name: "second-change", Value: -10, Usage: "the second culprit's change of tps, in percent"},
			&cli.IntFlag{Name: "hosts", Value: 1, Usage: "runner hosts the probabilistic search places its runs on, side by side (each measures its own references; the summary's wall time counts a round as its slowest host)"},
			&cli.StringFlag{Name: "host-speeds", Usage: "with --hosts: their speeds, comma-separated (1,0.85,0.7); by default evenly from 1 down to 0.7"},
			&cli.BoolFlag{Name: "table", Usage: "run a grid of scenarios and print it as a markdown table (see --grid)"},
			&cli.StringFlag{Name: "grid", Value: "targets", Usage: "with --table: targets (small regressions with random culprit positions, noise shapes, drift, merges, two culprits, 1000 commits; both searches side by side), noise (effect size x noise, for --search alone) or hosts (the scenario given on 1, 2, 4 and 8 runner hosts)"},
			&cli.BoolFlag{Name: "fixed", Usage: "with --table --grid noise --search classic: also find the fixed-sample design of equal accuracy for the 6x and 10x rows at 5% log-normal noise (slow)"},
			&cli.IntFlag{Name: "workers", Value: runtime.NumCPU(), DefaultText: "the number of CPUs", Usage: "goroutines (results do not depend on it)"},
		},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr("%s", flagError(c, err))
		},
		Action: simulateAction,
	}
}

// simulateAction reads simulate's flags and runs the scenario or the grid
// (app.Simulate).
func simulateAction(c *cli.Context) error {
	set := map[string]bool{}
	for _, name := range c.FlagNames() {
		set[name] = c.IsSet(name)
	}
	return app.Simulate(c.Context, app.SimulateRequest{
		Sessions: c.Int("sessions"), Commits: c.Int("commits"), CulpritPos: c.String("culprit-pos"), Merges: c.Bool("merges"),
		Change: c.Float64("change"), CV: c.Float64("cv"), Drift: c.Float64("drift"), Broken: c.IntSlice("broken"), Seed: c.Uint64("seed"),
		Repeats: c.Int("repeats"), MaxRepeats: c.Int("max-repeats"), Threshold: c.String("threshold"), Confidence: c.String("confidence"),
		Search: c.String("search"), MaxRuns: c.Int("max-runs"), Noise: c.String("noise"), StepAt: c.Int("step-at"),
		StepFactor: c.Float64("step-factor"), Flaky: c.Float64("flaky"), BuildEffect: c.Float64("build-effect"), BuildEffectUnknown: c.Bool("build-effect-unknown"), Layouts: c.String("layouts"), SecondPos: c.Int("second-pos"), SecondChange: c.Float64("second-change"),
		Hosts: c.Int("hosts"), HostSpeeds: c.String("host-speeds"), Table: c.Bool("table"), Grid: c.String("grid"), Fixed: c.Bool("fixed"), Workers: c.Int("workers"), Set: set, Out: c.App.Writer,
		Args: c.Args().Slice(),
	})
}
