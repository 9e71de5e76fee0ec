package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/bisect/session"
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
		},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr("%v (see perfbisect simulate --help)", err)
		},
		Action: func(c *cli.Context) error {
			threshold, err := parsePercent("threshold", c.String("threshold"))
			if err != nil {
				return err
			}
			sc := simulate.Scenario{Commits: c.Int("commits"), CulpritPos: c.Int("culprit-pos"), Factor: 1 + c.Float64("change")/100,
				CV: c.Float64("cv") / 100, DriftPerRun: c.Float64("drift") / 100, Broken: c.IntSlice("broken")}
			if sc.Commits < 1 || sc.CulpritPos < 0 || sc.CulpritPos > sc.Commits || sc.Factor <= 0 || sc.CV < 0 || c.Int("sessions") < 1 ||
				sc.DriftPerRun <= -0.01 || sc.DriftPerRun >= 0.01 {
				return usageErr("simulate: need --commits >= 1, 0 <= --culprit-pos <= --commits, --change > -100, --cv >= 0, --sessions >= 1, -1 < --drift < 1 (percent per run)")
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
			s := simulate.Run(sc, cfg, c.Int("sessions"), c.Uint64("seed"))
			if s.Errors == s.Sessions {
				return usageErr("simulate: every session failed: %s", s.FirstError)
			}
			fmt.Fprintln(c.App.Writer, s)
			return nil
		},
	}
}
