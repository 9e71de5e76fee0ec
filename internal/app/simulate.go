package app

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/simmeasure"
	"github.com/perfbisect/perfbisect/bisect/simulate"
	"github.com/perfbisect/perfbisect/internal/cliflag"
	"github.com/perfbisect/perfbisect/internal/usage"
)

// SimulateRequest is perfbisect simulate's settings as typed: one scenario
// (a history of Commits commits, a culprit at CulpritPos changing tps by
// Change percent, per-run noise CV percent of shape Noise, ...) run
// Sessions times, or with Table a grid of scenarios (Grid: targets or
// noise). Percentages are in percent (-40, 5); the decision settings are
// start's. Set holds the names of the settings given explicitly (the rest
// are defaults: the grid refuses the scenario's, the probabilistic search
// takes its own confidence and repeat limit unless they are set).
type SimulateRequest struct {
	Sessions, Commits     int
	CulpritPos            string // a position, 0 for none, or random
	Merges                bool
	Change, CV, Drift     float64
	Broken                []int
	Seed                  uint64
	Repeats, MaxRepeats   int
	Threshold, Confidence string
	Search                string
	MaxRuns               int
	Noise                 string
	StepAt                int
	StepFactor            float64
	Flaky                 float64
	BuildEffect           float64
	BuildEffectUnknown    bool   // the search is not told BuildEffect (no calibration)
	Layouts               string // layouts per build: a number from 1 to 64, or "run" (one per run)
	SecondPos             int
	SecondChange          float64
	Hosts                 int    // runner hosts (1: this machine)
	HostSpeeds            string // their speeds, "1,0.9,0.8" ("": from 1 down to 0.7)
	Table                 bool
	Grid                  string
	Fixed                 bool
	Workers               int
	Set                   map[string]bool
	// Args are arguments that are not settings: refused (the command line
	// stops reading flags at the first one, so what follows would be lost).
	Args []string
	// Out receives the summary or the table.
	Out io.Writer
}

// Simulate checks req (a bad setting is a usage error naming it) and runs
// the scenario or the grid, writing the summary or the markdown table to
// req.Out. Errors: usage; ctx's on interruption; usage too when every
// simulated session failed (the scenario cannot run).
func Simulate(ctx context.Context, req SimulateRequest) error {
	sc, cfg, confidence, err := simulation(req)
	if err != nil {
		return err
	}
	w := req.Out
	if req.Table && req.Grid == "targets" {
		if cfg.Search != session.SearchBayes {
			return usageError("{grid} targets compares both searches; leave out {search}")
		}
		rows := simulate.Targets(sc.Commits)
		cl := cfg
		cl.Search, cl.Confidence, cl.MaxRepeats = session.SearchClassic, confidence, req.MaxRepeats
		if err := simulate.Compare(ctx, rows, cfg, cl, req.Sessions, req.Seed, req.Workers); err != nil {
			return err
		}
		fmt.Fprintf(w, "%d sessions per row and design, %d commits (the culprit drawn uniformly per session unless the row places it), seed %d; --threshold %g%%; bayes at --confidence %g --max-repeats %d, classic at --confidence %g --max-repeats %d, --repeats %d; a build costs %d runs in the cost column\n\n",
			req.Sessions, sc.Commits, req.Seed, 100*cfg.Threshold, cfg.Confidence, cfg.MaxRepeats, cl.Confidence, cl.MaxRepeats, cfg.Repeats, simulate.SimBuildRuns)
		fmt.Fprint(w, simulate.CompareMarkdown(rows))
		return nil
	}
	if req.Table && req.Grid == "hosts" {
		rows := simulate.HostRows(sc)
		if err := simulate.Fill(ctx, rows, cfg, req.Sessions, req.Seed, req.Workers, nil); err != nil {
			return err
		}
		fmt.Fprintf(w, "%d sessions per row, %d commits, culprit %s, %+g%% at %g%% log-normal noise; --threshold %g%%, --confidence %g, --repeats %d, --max-repeats %d; a build takes %d runs' time on a host of speed 1; hosts' speeds from 1 down to 0.7 (runs on a host are its speed times the level)%s\n\n",
			req.Sessions, sc.Commits, req.CulpritPos, req.Change, req.CV, 100*cfg.Threshold, cfg.Confidence, cfg.Repeats, cfg.MaxRepeats, simulate.SimBuildRuns, buildEffectText(req))
		fmt.Fprint(w, simulate.HostsMarkdown(rows))
		return nil
	}
	if req.Table {
		rows := simulate.Grid(sc.Commits)
		var fixed func(simulate.Row) bool
		if req.Fixed {
			fixed = func(r simulate.Row) bool {
				return r.Scenario.Noise == "" && r.Scenario.CV == 0.05 && r.Scenario.CulpritPos > 0 &&
					r.Scenario.DriftPerRun == 0 && r.Scenario.StepAt == 0 && r.Scenario.Flaky == 0 && r.Scenario.Culprit2Pos == 0 && len(r.Scenario.Broken) == 0 &&
					(r.Name[:3] == "6x " || r.Name[:4] == "10x ")
			}
		}
		if err := simulate.Fill(ctx, rows, cfg, req.Sessions, req.Seed, req.Workers, fixed); err != nil {
			return err
		}
		fmt.Fprintf(w, "%d sessions per row, %d commits, culprit at %d; --repeats %d, --max-repeats %d, --threshold %g%%, --confidence %g; shift = good-bad change in multiples of the per-run noise on a log scale\n\n",
			req.Sessions, sc.Commits, sc.Commits*3/5, cfg.Repeats, cfg.MaxRepeats, 100*cfg.Threshold, cfg.Confidence)
		fmt.Fprint(w, simulate.Markdown(rows))
		return nil
	}
	s, err := simulate.RunContext(ctx, sc, cfg, req.Sessions, req.Seed, req.Workers)
	if err != nil {
		return err
	}
	if s.Errors == s.Sessions {
		return usageError("simulate: every session failed: %s", s.FirstError)
	}
	fmt.Fprintln(w, s)
	return nil
}

// simulation checks req and returns the scenario, the session settings and
// the confidence as typed (which the classic side of the targets grid
// uses).
func simulation(req SimulateRequest) (simulate.Scenario, session.Config, float64, error) {
	var sc simulate.Scenario
	var cfg session.Config
	if len(req.Args) > 0 {
		return sc, cfg, 0, usageError("simulate takes no arguments (got %q): every setting is a flag (see perfbisect simulate --help)", strings.Join(req.Args, " "))
	}
	threshold, err := cliflag.Percent("threshold", req.Threshold)
	if err != nil {
		return sc, cfg, 0, err
	}
	confidence, err := cliflag.Confidence(req.Confidence)
	if err != nil {
		return sc, cfg, 0, err
	}
	noise := req.Noise
	if noise == simmeasure.NoiseLogNormal {
		noise = ""
	}
	culpritPos, random, err := culpritPosition(req.CulpritPos, req.Commits)
	if err != nil {
		return sc, cfg, 0, err
	}
	if err := checkSimulation(req, culpritPos, random, noise); err != nil {
		return sc, cfg, 0, err
	}
	if err := checkTable(req); err != nil {
		return sc, cfg, 0, err
	}
	layouts := 1
	switch req.Layouts {
	case "", "1":
	case "run":
		layouts = simmeasure.LayoutPerRun
	default:
		n, err := strconv.Atoi(req.Layouts)
		if err != nil || n < 1 || n > 64 {
			return sc, cfg, 0, usageError("%s %q: want a number of layouts from 1 to 64, or run (a new layout for every run)", usage.Setting("layouts"), req.Layouts)
		}
		layouts = n
	}
	if req.BuildEffect == 0 {
		// Layouts and an unknown spread are of a per-build level: without
		// one they would change nothing, and a user would read the rows as
		// if they had.
		switch {
		case layouts != 1:
			return sc, cfg, 0, usageError("{layouts} %s needs {build-effect} above 0: without a per-build level every layout of a simulated build measures alike", req.Layouts)
		case req.BuildEffectUnknown:
			return sc, cfg, 0, usageError("{build-effect-unknown} needs {build-effect} above 0: the spread the search is not told")
		}
	}
	sc = simulate.Scenario{Layouts: layouts, Commits: req.Commits, CulpritPos: culpritPos, RandomPos: random, Merges: req.Merges, Factor: 1 + req.Change/100,
		CV: req.CV / 100, Noise: noise, DriftPerRun: req.Drift / 100, Broken: req.Broken,
		StepAt: req.StepAt, StepFactor: req.StepFactor, Flaky: req.Flaky / 100, BuildEffect: req.BuildEffect / 100,
		Culprit2Pos: req.SecondPos, Factor2: 1 + req.SecondChange/100}
	if req.Hosts > 1 {
		if sc.HostSpeeds, err = hostSpeeds(req.Hosts, req.HostSpeeds); err != nil {
			return sc, cfg, 0, err
		}
	} else if req.Set["host-speeds"] {
		return sc, cfg, 0, usageError("{host-speeds} needs {hosts} 2 or more")
	}
	for _, b := range sc.Broken {
		if b < 1 || b > sc.Commits {
			return sc, cfg, 0, usageError("{broken} %d: not a position between 1 and {commits} %d", b, sc.Commits)
		}
	}
	if req.Fixed && (!req.Table || req.Grid != "noise" || req.Search != session.SearchClassic) {
		return sc, cfg, 0, usageError("{fixed} works with {table} {grid} noise {search} classic only (the fixed-sample design is the classic search's)")
	}
	cfg = session.Config{Repeats: req.Repeats, MaxRepeats: req.MaxRepeats, Threshold: threshold,
		Confidence: confidence, Metric: session.TPS, Search: req.Search, MaxRuns: req.MaxRuns}
	if !req.BuildEffectUnknown && layouts >= 1 {
		// The search is told the spread of a build's mean level, as an A/A
		// calibration would: over k layouts, 1/sqrt(k) of one layout's
		// (a layout per run makes it run noise, which it measures).
		cfg.BuildEffect = sc.BuildEffect / math.Sqrt(float64(layouts))
	}
	searchDefaults(&cfg, req.Set["confidence"], req.Set["max-repeats"])
	if err := cfg.Validate(); err != nil {
		return sc, cfg, 0, With(Usage, err)
	}
	return sc, cfg, confidence, nil
}

// checkSimulation checks simulate's numeric settings, one per setting in
// the order of its flags: the first bad one is named with what it must be.
func checkSimulation(req SimulateRequest, culpritPos int, random bool, noise string) error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	commits := req.Commits
	for _, ck := range []struct {
		name  string
		value any
		ok    bool
		want  any // a string, or a usage error whose {names} are settings
	}{
		{"sessions", req.Sessions, req.Sessions >= 1 && req.Sessions <= simulate.MaxSessions, fmt.Sprintf("1 to %d", simulate.MaxSessions)},
		{"commits", commits, commits >= 1 && commits <= 100000, "1 to 100000"},
		{"culprit-pos", req.CulpritPos, culpritPos >= 0 && culpritPos <= commits || req.Table && !req.Set["culprit-pos"], usage.Errorf("0 (nothing regressed) to {commits} %d, or random", commits)},
		{"change", req.Change, finite(req.Change) && req.Change > -100 && req.Change <= 1000, "a percentage above -100 and at most 1000"},
		{"cv", req.CV, finite(req.CV) && req.CV >= 0 && req.CV <= 100, "a percentage from 0 to 100"},
		{"drift", req.Drift, finite(req.Drift) && req.Drift > -1 && req.Drift < 1, "a percentage per run between -1 and 1"},
		{"noise", req.Noise, noise == "" || noise == simmeasure.NoiseNormal || noise == simmeasure.NoiseT3 || noise == simmeasure.NoiseOutliers || noise == simmeasure.NoiseBimodal, "lognormal, normal, t3, outliers or bimodal"},
		{"grid", req.Grid, req.Grid == "targets" || req.Grid == "noise" || req.Grid == "hosts", "targets, noise or hosts"},
		{"hosts", req.Hosts, req.Hosts >= 1 && req.Hosts <= 64 && (req.Hosts == 1 || req.Search == session.SearchBayes), "1 to 64 runner hosts, with the probabilistic search"},
		{"step-at", req.StepAt, req.StepAt >= 0, "a run number, or 0 for no step"},
		{"step-factor", req.StepFactor, finite(req.StepFactor) && req.StepFactor > 0 && req.StepFactor <= 10, "a factor above 0 and at most 10"},
		{"flaky", req.Flaky, finite(req.Flaky) && req.Flaky >= 0 && req.Flaky <= 50, "a percentage from 0 to 50"},
		{"build-effect", req.BuildEffect, finite(req.BuildEffect) && req.BuildEffect >= 0 && req.BuildEffect <= 50, "a percentage from 0 to 50"},
		{"second-pos", req.SecondPos, req.SecondPos >= 0 && req.SecondPos <= commits && (req.SecondPos == 0 || req.SecondPos != culpritPos || random),
			usage.Errorf("0 (none) to {commits} %d, not {culprit-pos} (one culprit's change is {change})", commits)},
		{"second-change", req.SecondChange, finite(req.SecondChange) && req.SecondChange > -100 && req.SecondChange <= 1000, "a percentage above -100 and at most 1000"},
		{"workers", req.Workers, req.Workers >= 1 && req.Workers <= 256, "1 to 256"},
	} {
		if !ck.ok {
			return usageError("%s %v: want %v (see perfbisect simulate --help)", usage.Setting(ck.name), ck.value, ck.want)
		}
	}
	return nil
}

// hostSpeeds reads {host-speeds} for k hosts: k factors above 0 and at
// most 10, comma-separated, or none for simulate.HostSpeeds(k).
func hostSpeeds(k int, v string) ([]float64, error) {
	if strings.TrimSpace(v) == "" {
		return simulate.HostSpeeds(k), nil
	}
	parts := strings.Split(v, ",")
	if len(parts) != k {
		return nil, usageError("{host-speeds} %q: want %d speeds, one per host of {hosts} %d", v, k, k)
	}
	out := make([]float64, k)
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(f > 0 && f <= 10) {
			return nil, usageError("{host-speeds} %q: %q is not a speed above 0 and at most 10 (1: the reference host)", v, p)
		}
		out[i] = f
	}
	return out, nil
}

// culpritPosition reads the culprit's position: a number, or random (drawn
// per session; the position is then 1, for the checks).
func culpritPosition(v string, commits int) (pos int, random bool, err error) {
	if v == "random" {
		return 1, true, nil
	}
	if pos, err = strconv.Atoi(v); err != nil {
		return 0, false, usageError("{culprit-pos} %q: want a position from 0 (nothing regressed) to {commits} %d, or random (see perfbisect simulate --help)", v, commits)
	}
	return pos, false, nil
}

// checkTable refuses, with Table, the scenario settings the grid would
// ignore, and a history too short for it.
func checkTable(req SimulateRequest) error {
	if !req.Table || req.Grid == "hosts" {
		return nil // the hosts grid runs the scenario given
	}
	var set usage.Settings
	for _, f := range []usage.Setting{"culprit-pos", "change", "cv", "drift", "broken", "noise", "step-at", "step-factor", "flaky", "build-effect", "build-effect-unknown", "layouts", "second-pos", "second-change", "merges"} {
		if req.Set[string(f)] {
			set = append(set, f)
		}
	}
	if len(set) > 0 {
		return usageError("{table} runs its own grid of scenarios; %v would be ignored: leave them out", set)
	}
	if req.Commits < 10 {
		return usageError("{commits} %d: {table} needs at least 10 (the grid puts a second culprit and a broken parent around the culprit)", req.Commits)
	}
	return nil
}

// buildEffectText is a table header's words for the per-build level
// (--build-effect, --build-effect-unknown, --layouts), "" without one.
func buildEffectText(req SimulateRequest) string {
	if req.BuildEffect == 0 {
		return ""
	}
	told := "the search told it"
	if req.BuildEffectUnknown {
		told = "the search not told it"
	}
	layouts := req.Layouts
	if layouts == "" {
		layouts = "1"
	}
	return fmt.Sprintf("; a per-build level of %g%% (--build-effect; %s), --layouts %s", req.BuildEffect, told, layouts)
}
