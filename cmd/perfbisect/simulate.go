package main

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/perfbisect/perfbisect/internal/cliflag"

	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/sim"
	"github.com/perfbisect/perfbisect/bisect/simulate"
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
			&cli.StringFlag{Name: "search", Value: session.SearchBayes, Usage: "as for start: bayes or classic"},
			&cli.IntFlag{Name: "max-runs", Usage: "as for start"},
			&cli.StringFlag{Name: "noise", Value: "lognormal", Usage: "shape of the noise: lognormal, normal, t3 (heavy tails), outliers (one run in 20 a 20-50% slower hiccup) or bimodal (one run in five 15% slow)"},
			&cli.IntFlag{Name: "step-at", Usage: "from this run on the machine is --step-factor times as fast (0: never)"},
			&cli.Float64Flag{Name: "step-factor", Value: 0.9, Usage: "see --step-at"},
			&cli.Float64Flag{Name: "flaky", Usage: "share of runs that fail through no fault of the revision, in percent (each attempt independently)"},
			&cli.IntFlag{Name: "second-pos", Usage: "position of a second culprit (0: none)"},
			&cli.Float64Flag{Name: "second-change", Value: -10, Usage: "the second culprit's change of tps, in percent"},
			&cli.BoolFlag{Name: "table", Usage: "run a grid of scenarios and print it as a markdown table (see --grid)"},
			&cli.StringFlag{Name: "grid", Value: "targets", Usage: "with --table: targets (small regressions with random culprit positions, noise shapes, drift, merges, two culprits, 1000 commits; both searches side by side) or noise (effect size x noise, for --search alone)"},
			&cli.BoolFlag{Name: "fixed", Usage: "with --table --grid noise --search classic: also find the fixed-sample design of equal accuracy for the 6x and 10x rows at 5% log-normal noise (slow)"},
			&cli.IntFlag{Name: "workers", Value: runtime.NumCPU(), DefaultText: "the number of CPUs", Usage: "goroutines (results do not depend on it)"},
		},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr("%s", flagError(c, err))
		},
		Action: simulateAction,
	}
}

// simulateAction checks simulate's flags and runs the scenario or the grid.
func simulateAction(c *cli.Context) error {
	sc, cfg, confidence, err := simulationOf(c)
	if err != nil {
		return err
	}
	return runSimulation(c, sc, cfg, confidence)
}

// simulationOf reads simulate's flags into the scenario and the session
// settings (and the --confidence as typed, which the classic side of the
// targets grid uses); a bad flag is a usage error naming it.
func simulationOf(c *cli.Context) (simulate.Scenario, session.Config, float64, error) {
	var sc simulate.Scenario
	var cfg session.Config
	threshold, err := cliflag.Percent("threshold", c.String("threshold"))
	if err != nil {
		return sc, cfg, 0, err
	}
	confidence, err := cliflag.Confidence(c.String("confidence"))
	if err != nil {
		return sc, cfg, 0, err
	}
	noise := c.String("noise")
	if noise == sim.NoiseLogNormal {
		noise = ""
	}
	commits := c.Int("commits")
	culpritPos, random, err := culpritPosOf(c.String("culprit-pos"), commits)
	if err != nil {
		return sc, cfg, 0, err
	}
	if err := checkSimulateFlags(c, commits, culpritPos, random, noise); err != nil {
		return sc, cfg, 0, err
	}
	sc = simulate.Scenario{Commits: commits, CulpritPos: culpritPos, RandomPos: random, Merges: c.Bool("merges"), Factor: 1 + c.Float64("change")/100,
		CV: c.Float64("cv") / 100, Noise: noise, DriftPerRun: c.Float64("drift") / 100, Broken: c.IntSlice("broken"),
		StepAt: c.Int("step-at"), StepFactor: c.Float64("step-factor"), Flaky: c.Float64("flaky") / 100,
		Culprit2Pos: c.Int("second-pos"), Factor2: 1 + c.Float64("second-change")/100}
	for _, b := range sc.Broken {
		if b < 1 || b > sc.Commits {
			return sc, cfg, 0, usageErr("--broken %d: not a position between 1 and --commits %d", b, sc.Commits)
		}
	}
	if c.Bool("fixed") && (!c.Bool("table") || c.String("grid") != "noise" || c.String("search") != session.SearchClassic) {
		return sc, cfg, 0, usageErr("--fixed works with --table --grid noise --search classic only (the fixed-sample design is the classic search's)")
	}
	if err := checkTableFlags(c, commits); err != nil {
		return sc, cfg, 0, err
	}
	cfg = session.Config{Repeats: c.Int("repeats"), MaxRepeats: c.Int("max-repeats"), Threshold: threshold,
		Confidence: confidence, Metric: session.TPS, Search: c.String("search"), MaxRuns: c.Int("max-runs")}
	if cfg.Search == session.SearchBayes && !c.IsSet("confidence") {
		cfg.Confidence = app.BayesConfidence
	}
	if cfg.Search == session.SearchBayes && !c.IsSet("max-repeats") {
		cfg.MaxRepeats = session.BayesEndpointRuns
	}
	if err := cfg.Validate(); err != nil {
		return sc, cfg, 0, app.With(app.Usage, err)
	}
	return sc, cfg, confidence, nil
}

// runSimulation runs the targets grid, the noise grid or the one scenario
// and prints the table or the summary.
func runSimulation(c *cli.Context, sc simulate.Scenario, cfg session.Config, confidence float64) error {
	if c.Bool("table") && c.String("grid") == "targets" {
		if cfg.Search != session.SearchBayes {
			return usageErr("--grid targets compares both searches; leave out --search")
		}
		rows := simulate.Targets(sc.Commits)
		cl := cfg
		cl.Search, cl.Confidence, cl.MaxRepeats = session.SearchClassic, confidence, c.Int("max-repeats")
		if err := simulate.Compare(c.Context, rows, cfg, cl, c.Int("sessions"), c.Uint64("seed"), c.Int("workers")); err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "%d sessions per row and design, %d commits (the culprit drawn uniformly per session unless the row places it), seed %d; --threshold %g%%; bayes at --confidence %g --max-repeats %d, classic at --confidence %g --max-repeats %d, --repeats %d; a build costs %d runs in the cost column\n\n",
			c.Int("sessions"), sc.Commits, c.Uint64("seed"), 100*cfg.Threshold, cfg.Confidence, cfg.MaxRepeats, cl.Confidence, cl.MaxRepeats, cfg.Repeats, simulate.SimBuildRuns)
		fmt.Fprint(c.App.Writer, simulate.CompareMarkdown(rows))
		return nil
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
		if err := simulate.Fill(c.Context, rows, cfg, c.Int("sessions"), c.Uint64("seed"), c.Int("workers"), fixed); err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "%d sessions per row, %d commits, culprit at %d; --repeats %d, --max-repeats %d, --threshold %g%%, --confidence %g; shift = good-bad change in multiples of the per-run noise on a log scale\n\n",
			c.Int("sessions"), sc.Commits, sc.Commits*3/5, cfg.Repeats, cfg.MaxRepeats, 100*cfg.Threshold, cfg.Confidence)
		fmt.Fprint(c.App.Writer, simulate.Markdown(rows))
		return nil
	}
	s, err := simulate.RunContext(c.Context, sc, cfg, c.Int("sessions"), c.Uint64("seed"), c.Int("workers"))
	if err != nil {
		return err
	}
	if s.Errors == s.Sessions {
		return usageErr("simulate: every session failed: %s", s.FirstError)
	}
	fmt.Fprintln(c.App.Writer, s)
	return nil
}

// checkSimulateFlags checks simulate's numeric flags, one per flag in flag
// order: the first bad one is named with what it must be.
func checkSimulateFlags(c *cli.Context, commits, culpritPos int, random bool, noise string) error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	// One check per flag, in flag order: the first bad one is named
	// with what it must be.
	for _, ck := range []struct {
		flag string
		ok   bool
		want string
	}{
		{"sessions", c.Int("sessions") >= 1 && c.Int("sessions") <= simulate.MaxSessions, fmt.Sprintf("1 to %d", simulate.MaxSessions)},
		{"commits", commits >= 1 && commits <= 100000, "1 to 100000"},
		{"culprit-pos", culpritPos >= 0 && culpritPos <= commits || c.Bool("table") && !c.IsSet("culprit-pos"), fmt.Sprintf("0 (nothing regressed) to --commits %d, or random", commits)},
		{"change", finite(c.Float64("change")) && c.Float64("change") > -100 && c.Float64("change") <= 1000, "a percentage above -100 and at most 1000"},
		{"cv", finite(c.Float64("cv")) && c.Float64("cv") >= 0 && c.Float64("cv") <= 100, "a percentage from 0 to 100"},
		{"drift", finite(c.Float64("drift")) && c.Float64("drift") > -1 && c.Float64("drift") < 1, "a percentage per run between -1 and 1"},
		{"noise", noise == "" || noise == sim.NoiseNormal || noise == sim.NoiseT3 || noise == sim.NoiseOutliers || noise == sim.NoiseBimodal, "lognormal, normal, t3, outliers or bimodal"},
		{"grid", c.String("grid") == "targets" || c.String("grid") == "noise", "targets or noise"},
		{"step-at", c.Int("step-at") >= 0, "a run number, or 0 for no step"},
		{"step-factor", finite(c.Float64("step-factor")) && c.Float64("step-factor") > 0 && c.Float64("step-factor") <= 10, "a factor above 0 and at most 10"},
		{"flaky", finite(c.Float64("flaky")) && c.Float64("flaky") >= 0 && c.Float64("flaky") <= 50, "a percentage from 0 to 50"},
		{"second-pos", c.Int("second-pos") >= 0 && c.Int("second-pos") <= commits && (c.Int("second-pos") == 0 || c.Int("second-pos") != culpritPos || random),
			fmt.Sprintf("0 (none) to --commits %d, not --culprit-pos (one culprit's change is --change)", commits)},
		{"second-change", finite(c.Float64("second-change")) && c.Float64("second-change") > -100 && c.Float64("second-change") <= 1000, "a percentage above -100 and at most 1000"},
		{"workers", c.Int("workers") >= 1 && c.Int("workers") <= 256, "1 to 256"},
	} {
		if !ck.ok {
			return usageErr("--%s %s: want %s (see perfbisect simulate --help)", ck.flag, c.String(ck.flag), ck.want)
		}
	}
	return nil
}

// culpritPosOf reads --culprit-pos: a position, or random (drawn per
// session; the position is then 1, for the checks).
func culpritPosOf(v string, commits int) (pos int, random bool, err error) {
	if v == "random" {
		return 1, true, nil
	}
	if pos, err = strconv.Atoi(v); err != nil {
		return 0, false, usageErr("--culprit-pos %q: want a position from 0 (nothing regressed) to --commits %d, or random (see perfbisect simulate --help)", v, commits)
	}
	return pos, false, nil
}

// checkTableFlags refuses, with --table, the scenario flags the grid would
// ignore, and a history too short for it.
func checkTableFlags(c *cli.Context, commits int) error {
	if c.Bool("table") {
		var set []string
		for _, f := range []string{"culprit-pos", "change", "cv", "drift", "broken", "noise", "step-at", "step-factor", "flaky", "second-pos", "second-change", "merges"} {
			if c.IsSet(f) {
				set = append(set, "--"+f)
			}
		}
		if len(set) > 0 {
			return usageErr("--table runs its own grid of scenarios; %s would be ignored: leave them out", strings.Join(set, ", "))
		}
		if commits < 10 {
			return usageErr("--commits %d: --table needs at least 10 (the grid puts a second culprit and a broken parent around the culprit)", commits)
		}
	}
	return nil
}
