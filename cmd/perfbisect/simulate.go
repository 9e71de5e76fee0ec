package main

import (
	"fmt"
	"runtime"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/sim"
	"github.com/perfbisect/perfbisect/bisect/simulate"
)

func simulateCommand() *cli.Command {
	return &cli.Command{
		Name:  "simulate",
		Usage: "run the real search and decisions on simulated histories and print how often the answer is right",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "sessions", Value: 500, Usage: "simulated sessions"},
			&cli.IntFlag{Name: "commits", Value: 40, Usage: "commits between good and bad"},
			&cli.IntFlag{Name: "culprit-pos", Value: 23, Usage: "position of the culprit (0: nothing regressed)"},
			&cli.Float64Flag{Name: "change", Value: -40, Usage: "the culprit's change of tps, in percent"},
			&cli.Float64Flag{Name: "cv", Value: 5, Usage: "per-run noise (coefficient of variation), in percent"},
			&cli.Float64Flag{Name: "drift", Value: 0, Usage: "machine drift per run, in percent (e.g. -0.05)"},
			&cli.IntSliceFlag{Name: "broken", Usage: "positions that do not build"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed"},
			&cli.IntFlag{Name: "repeats", Value: 6, Usage: "as for start"},
			&cli.IntFlag{Name: "max-repeats", Value: 18, Usage: "as for start"},
			&cli.StringFlag{Name: "threshold", Value: "5", Usage: "as for start, in percent"},
			&cli.Float64Flag{Name: "confidence", Value: 0.95, Usage: "as for start"},
			&cli.StringFlag{Name: "noise", Value: "lognormal", Usage: "shape of the noise: lognormal, normal, t3 (heavy tails) or outliers (one run in 20 a 20-50% slower hiccup)"},
			&cli.IntFlag{Name: "step-at", Usage: "from this run on the machine is --step-factor times as fast (0: never)"},
			&cli.Float64Flag{Name: "step-factor", Value: 0.9, Usage: "see --step-at"},
			&cli.Float64Flag{Name: "flaky", Usage: "share of runs that fail once through no fault of the revision, in percent"},
			&cli.IntFlag{Name: "second-pos", Usage: "position of a second culprit (0: none)"},
			&cli.Float64Flag{Name: "second-change", Value: -10, Usage: "the second culprit's change of tps, in percent"},
			&cli.BoolFlag{Name: "table", Usage: "run the README's grid of scenarios (effect size x noise, noise shapes, drift, flaky runs, two culprits) and print it as a markdown table"},
			&cli.BoolFlag{Name: "fixed", Usage: "with --table: also find the fixed-sample design of equal accuracy for the 6x and 10x rows at 5% log-normal noise (slow)"},
			&cli.IntFlag{Name: "workers", Value: runtime.NumCPU(), Usage: "goroutines (results do not depend on it)"},
		},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr("%v (see perfbisect simulate --help)", err)
		},
		Action: func(c *cli.Context) error {
			threshold, err := parsePercent("threshold", c.String("threshold"))
			if err != nil {
				return err
			}
			noise := c.String("noise")
			if noise == sim.NoiseLogNormal {
				noise = ""
			}
			sc := simulate.Scenario{Commits: c.Int("commits"), CulpritPos: c.Int("culprit-pos"), Factor: 1 + c.Float64("change")/100,
				CV: c.Float64("cv") / 100, Noise: noise, DriftPerRun: c.Float64("drift") / 100, Broken: c.IntSlice("broken"),
				StepAt: c.Int("step-at"), StepFactor: c.Float64("step-factor"), Flaky: c.Float64("flaky") / 100,
				Culprit2Pos: c.Int("second-pos"), Factor2: 1 + c.Float64("second-change")/100}
			switch {
			case sc.Commits < 1 || sc.CulpritPos < 0 || sc.CulpritPos > sc.Commits || sc.Factor <= 0 || sc.CV < 0 || c.Int("sessions") < 1 ||
				sc.DriftPerRun <= -0.01 || sc.DriftPerRun >= 0.01:
				return usageErr("simulate: need --commits >= 1, 0 <= --culprit-pos <= --commits, --change > -100, --cv >= 0, --sessions >= 1, -1 < --drift < 1 (percent per run)")
			case noise != "" && noise != sim.NoiseNormal && noise != sim.NoiseT3 && noise != sim.NoiseOutliers:
				return usageErr("--noise %q: want lognormal, normal, t3 or outliers", c.String("noise"))
			case sc.StepAt < 0 || sc.StepFactor <= 0 || sc.Flaky < 0 || sc.Flaky >= 1 || sc.Culprit2Pos < 0 || sc.Culprit2Pos > sc.Commits || sc.Factor2 <= 0:
				return usageErr("simulate: need --step-at >= 0, --step-factor > 0, 0 <= --flaky < 100, 0 <= --second-pos <= --commits, --second-change > -100")
			}
			for _, b := range sc.Broken {
				if b < 1 || b > sc.Commits {
					return usageErr("--broken %d: not a position between 1 and --commits %d", b, sc.Commits)
				}
			}
			cfg := session.Config{Repeats: c.Int("repeats"), MaxRepeats: c.Int("max-repeats"), Threshold: threshold,
				Confidence: c.Float64("confidence"), Metric: session.TPS}
			if err := cfg.Validate(); err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			if c.Bool("table") {
				rows := simulate.Grid(sc.Commits)
				var fixed func(simulate.Row) bool
				if c.Bool("fixed") {
					fixed = func(r simulate.Row) bool {
						return r.Scenario.Noise == "" && r.Scenario.CV == 0.05 && r.Scenario.CulpritPos > 0 &&
							r.Scenario.DriftPerRun == 0 && r.Scenario.StepAt == 0 && r.Scenario.Flaky == 0 && r.Scenario.Culprit2Pos == 0 && len(r.Scenario.Broken) == 0 &&
							(r.Name[:3] == "6x " || r.Name[:4] == "10x ")
					}
				}
				simulate.Fill(rows, cfg, c.Int("sessions"), c.Uint64("seed"), c.Int("workers"), fixed)
				fmt.Fprintf(c.App.Writer, "%d sessions per row, %d commits, culprit at %d; --repeats %d, --max-repeats %d, --threshold %g%%, --confidence %g; shift = good-bad change in multiples of the per-run noise on a log scale\n\n",
					c.Int("sessions"), sc.Commits, sc.Commits*3/5, cfg.Repeats, cfg.MaxRepeats, 100*cfg.Threshold, cfg.Confidence)
				fmt.Fprint(c.App.Writer, simulate.Markdown(rows))
				return nil
			}
			s := simulate.RunParallel(sc, cfg, c.Int("sessions"), c.Uint64("seed"), c.Int("workers"))
			if s.Errors == s.Sessions {
				return usageErr("simulate: every session failed: %s", s.FirstError)
			}
			fmt.Fprintln(c.App.Writer, s)
			return nil
		},
	}
}
