package simulate

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/perfbisect/perfbisect/bisect/session"
)

// Row is one line of the table: a scenario and what the sessions did.
type Row struct {
	Group, Name string
	Scenario    Scenario
	Summary     Summary
	// FixedN is the smallest number of runs per side of a fixed-sample design
	// (every decision takes exactly FixedN in one look) that is as accurate as
	// the sequential one (correct rate at most 0.5 points lower, wrong rate at
	// most 0.5 points higher), and Fixed its summary; 0 when not computed or
	// not reached by 40.
	FixedN int
	Fixed  Summary
	// Classic is the classic search's summary of the same scenario, when the
	// table compares the two designs (Compare).
	Classic *Summary
}

// Targets is the small-regressions grid: every row with --threshold 1% and
// the culprit's position drawn uniformly per session, over commits commits
// with 3% log-normal noise unless the row says otherwise: the effect sizes
// users report, the noise shapes (normal, t3, one-in-20 outliers, one run in
// five 15% slow), drift, a step change, flaky runs, two culprits (the first,
// 2x the noise at 1/5, is the right answer), a broken parent of the culprit,
// a history with merges, and a 1,000-commit range.
func Targets(commits int) []Row {
	type row struct {
		group, name string
		sc          Scenario
	}
	base := func(change, cv float64) Scenario {
		sc := Scenario{Commits: commits, CV: cv, RandomPos: true}
		if change != 0 {
			sc.CulpritPos, sc.Factor = 1, 1+change
		}
		return sc
	}
	name := func(sc Scenario) string {
		if sc.CulpritPos == 0 {
			return "no regression"
		}
		return fmt.Sprintf("%+.1f%% (%.2gx noise)", 100*(sc.Factor-1), -math.Log(sc.Factor)/sc.CV)
	}
	var rows []Row
	add := func(group string, sc Scenario) {
		rows = append(rows, Row{Group: group, Name: name(sc), Scenario: sc})
	}
	for _, x := range []struct{ change, cv float64 }{{0, 0.03}, {-0.05, 0.02}, {-0.05, 0.03}, {-0.03, 0.03}, {-0.03, 0.015}, {-0.022, 0.01}, {-0.10, 0.05}, {-0.40, 0.03}} {
		add(fmt.Sprintf("log-normal noise %g%%", 100*x.cv), base(x.change, x.cv))
	}
	for _, noise := range []string{"normal", "t3", "outliers", "bimodal"} {
		sc := base(-0.05, 0.03)
		sc.Noise = noise
		add(noise+" noise 3%", sc)
	}
	variants := []struct {
		group string
		set   func(*Scenario)
	}{
		{"drift -10% over 150 runs", func(s *Scenario) { s.DriftPerRun = -0.10 / 150 }},
		{"step -10% at run 60", func(s *Scenario) { s.StepAt, s.StepFactor = 60, 0.90 }},
		{"2% of runs fail", func(s *Scenario) { s.Flaky = 0.02 }},
		{"merges (branches of 2)", func(s *Scenario) { s.Merges = true }},
	}
	for _, v := range variants {
		for _, change := range []float64{0, -0.05} {
			sc := base(change, 0.03)
			v.set(&sc)
			add(v.group+", noise 3%", sc)
		}
	}
	// Fixed positions: the culprit at 3/5 with a first, smaller culprit at
	// 1/5, or with a parent that does not build.
	pos := max(commits*3/5, 2)
	two := Scenario{Commits: commits, CV: 0.03, CulpritPos: pos, Factor: 0.90, Culprit2Pos: max(commits/5, 1), Factor2: Shift(2, 0.03)}
	add(fmt.Sprintf("two culprits: %+.1f%% at %d, first %+.1f%% at %d, noise 3%%", -10.0, pos, 100*(two.Factor2-1), two.Culprit2Pos), two)
	broken := Scenario{Commits: commits, CV: 0.03, CulpritPos: pos, Factor: 0.95, Broken: []int{pos - 1}}
	add("culprit's parent does not build, noise 3%", broken)
	big := base(-0.05, 0.03)
	big.Commits = 1000
	add("1000 commits, noise 3%", big)
	return rows
}

// Compare fills every row with the probabilistic search's policy cfg and the
// classic search's cl (Search is set to each), as Fill.
func Compare(ctx context.Context, rows []Row, cfg, cl session.Config, sessions int, seed uint64, workers int) error {
	cfg.Search, cl.Search = session.SearchBayes, session.SearchClassic
	for i := range rows {
		var err error
		if rows[i].Summary, err = RunContext(ctx, rows[i].Scenario, cfg, sessions, seed, workers); err != nil {
			return err
		}
		c, err := RunContext(ctx, rows[i].Scenario, cl, sessions, seed, workers)
		if err != nil {
			return err
		}
		rows[i].Classic = &c
	}
	return nil
}

// CompareMarkdown renders rows filled by Compare: per design, correct,
// wrong, range, runs (mean, p95), commits built (mean) and the cost (runs +
// SimBuildRuns per build).
func CompareMarkdown(rows []Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| scenario | change | bayes: exact | wrong | range / missed | runs mean / p95 | built | cost | classic: exact | wrong | range / missed | runs mean / p95 | built | cost |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	cells := func(s Summary, culprit bool) string {
		miss := pct(s.Rate(s.NoRegression))
		rng := pct(s.Rate(s.Ambiguous))
		if !culprit {
			miss, rng = "–", pct(s.Rate(s.FalseAlarm))
		}
		return fmt.Sprintf("%s | %s | %s / %s | %.0f / %.0f | %.1f | %.0f", pct(s.Rate(s.Correct)), pct(s.Rate(s.Wrong())), rng, miss,
			s.MeanRuns, s.P95Runs, s.MeanBuilt, s.MeanCost)
	}
	for _, r := range rows {
		cl := "– | – | – | – | – | –"
		if r.Classic != nil {
			cl = cells(*r.Classic, r.Scenario.CulpritPos > 0)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Group, r.Name, cells(r.Summary, r.Scenario.CulpritPos > 0), cl)
	}
	return b.String()
}

// Shift is the culprit's throughput factor for a good-bad shift of r times the
// per-run noise cv on a log scale: exp(-r*cv).
func Shift(r, cv float64) float64 { return math.Exp(-r * cv) }

// Grid is the table's scenarios, over commits commits with the culprit at
// about 3/5 of the range: effect size (good-bad shift in multiples of the
// per-run noise, on a log scale) x noise (2%, 5%, 10%) with log-normal noise;
// other noise shapes, drift, a step change, flaky runs, a second smaller
// culprit and a broken build next to the culprit at 5% noise.
func Grid(commits int) []Row {
	pos := commits * 3 / 5
	if pos < 1 {
		pos = 1
	}
	var rows []Row
	for _, cv := range []float64{0.02, 0.05, 0.10} {
		for _, r := range []float64{0, 1, 2, 3, 4, 6, 10} {
			sc := Scenario{Commits: commits, CV: cv}
			name := "no regression"
			if r > 0 {
				sc.CulpritPos, sc.Factor = pos, Shift(r, cv)
				name = fmt.Sprintf("%gx (%+.1f%%)", r, 100*(sc.Factor-1))
			}
			rows = append(rows, Row{Group: fmt.Sprintf("log-normal noise %g%%", 100*cv), Name: name, Scenario: sc})
		}
	}
	for _, noise := range []string{"normal", "t3", "outliers"} {
		for _, r := range []float64{0, 3, 6, 10} {
			sc := Scenario{Commits: commits, CV: 0.05, Noise: noise}
			name := "no regression"
			if r > 0 {
				sc.CulpritPos, sc.Factor = pos, Shift(r, 0.05)
				name = fmt.Sprintf("%gx (%+.1f%%)", r, 100*(sc.Factor-1))
			}
			rows = append(rows, Row{Group: noise + " noise 5%", Name: name, Scenario: sc})
		}
	}
	type variant struct {
		group string
		set   func(*Scenario)
	}
	for _, v := range []variant{
		{"drift -10% over 150 runs", func(s *Scenario) { s.DriftPerRun = -0.10 / 150 }},
		{"step -10% at run 60", func(s *Scenario) { s.StepAt, s.StepFactor = 60, 0.90 }},
		{"2% of runs fail", func(s *Scenario) { s.Flaky = 0.02 }},
		{"second culprit of 2x at 1/5", func(s *Scenario) { s.Culprit2Pos, s.Factor2 = max(commits/5, 1), Shift(2, 0.05) }},
		{"culprit's parent does not build", func(s *Scenario) { s.Broken = []int{pos - 1} }},
	} {
		for _, r := range []float64{0, 3, 6, 10} {
			sc := Scenario{Commits: commits, CV: 0.05}
			name := "no regression"
			if r > 0 {
				sc.CulpritPos, sc.Factor = pos, Shift(r, 0.05)
				name = fmt.Sprintf("%gx (%+.1f%%)", r, 100*(sc.Factor-1))
			}
			v.set(&sc)
			if sc.CulpritPos == 0 && sc.Culprit2Pos > 0 {
				continue // the second culprit alone is the 2x row above
			}
			rows = append(rows, Row{Group: v.group + ", noise 5%", Name: name, Scenario: sc})
		}
	}
	return rows
}

// HostSpeeds are k hosts' speeds from 1 down to 0.7, evenly: a fleet whose
// slowest host is 30% below its fastest.
func HostSpeeds(k int) []float64 {
	if k <= 1 {
		return nil
	}
	out := make([]float64, k)
	for i := range out {
		out[i] = 1 - 0.3*float64(i)/float64(k-1)
	}
	return out
}

// HostRows is sc on 1, 2, 4 and 8 runner hosts (HostSpeeds), for the
// table of docs/statistics.md.
func HostRows(sc Scenario) []Row {
	var rows []Row
	for _, k := range []int{1, 2, 4, 8} {
		r := sc
		r.HostSpeeds = HostSpeeds(k)
		rows = append(rows, Row{Group: "hosts", Name: fmt.Sprint(k), Scenario: r})
	}
	return rows
}

// HostsMarkdown renders HostRows filled: accuracy, runs, builds and wall
// time per host count, the wall time against the first row's.
func HostsMarkdown(rows []Row) string {
	var b strings.Builder
	b.WriteString("| hosts | correct | wrong | missed | range | runs mean / p95 | built mean | wall time mean / p95 (runs' time) | wall against 1 host |\n")
	b.WriteString("|---:|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		s := r.Summary
		rel := "–"
		if rows[0].Summary.MeanWall > 0 {
			rel = fmt.Sprintf("%.2fx", s.MeanWall/rows[0].Summary.MeanWall)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.0f / %.0f | %.1f | %.0f / %.0f | %s |\n", r.Name, pct(s.Rate(s.Correct)), pct(s.Rate(s.Wrong())),
			pct(s.Rate(s.NoRegression)), pct(s.Rate(s.Ambiguous)), s.MeanRuns, s.P95Runs, s.MeanBuilt, s.MeanWall, s.P95Wall, rel)
	}
	return b.String()
}

// Fill runs sessions sessions of every row with cfg (seeded with seed, on
// workers goroutines) and, for the rows fixed selects, finds the fixed-sample
// design of the same accuracy. It stops with ctx's error when ctx is done.
func Fill(ctx context.Context, rows []Row, cfg session.Config, sessions int, seed uint64, workers int, fixed func(Row) bool) error {
	for i := range rows {
		var err error
		if rows[i].Summary, err = RunContext(ctx, rows[i].Scenario, cfg, sessions, seed, workers); err != nil {
			return err
		}
		if fixed != nil && fixed(rows[i]) {
			if rows[i].FixedN, rows[i].Fixed, err = FixedEquivalent(ctx, rows[i].Scenario, cfg, rows[i].Summary, sessions, seed, workers); err != nil {
				return err
			}
		}
	}
	return nil
}

// FixedEquivalent finds the smallest n (at most 40) such that the fixed-sample
// design with n runs per side (blocks) in every decision is as accurate as seq
// (correct rate at most 0.5 points lower and wrong rate at most 0.5 points
// higher) on sc; 0 when none is. It stops with ctx's error when ctx is done.
func FixedEquivalent(ctx context.Context, sc Scenario, cfg session.Config, seq Summary, sessions int, seed uint64, workers int) (int, Summary, error) {
	for n := 2; n <= 40; n++ {
		c := cfg
		c.Repeats, c.MaxRepeats, c.Fixed = n, n, true
		s, err := RunContext(ctx, sc, c, sessions, seed+1, workers)
		if err != nil {
			return 0, Summary{}, err
		}
		if s.Errors == s.Sessions {
			continue // n cannot reach the decisions' level
		}
		if s.Rate(s.Correct) >= seq.Rate(seq.Correct)-0.005 && s.Rate(s.Wrong()) <= seq.Rate(seq.Wrong())+0.005 {
			return n, s, nil
		}
	}
	return 0, Summary{}, nil
}

// Markdown renders rows as a table: correct, wrong, missed (no regression
// said), range (and how many held a culprit), runs per session (mean, p95),
// commits built (mean, p95), runs spent against the pre-flight estimate (where
// at least a tenth of the sessions made one), and
// the fixed-sample design of the same accuracy where computed.
func Markdown(rows []Row) string {
	var b strings.Builder
	b.WriteString("| scenario | shift | correct | wrong | missed | range (holds a culprit) | runs mean / p95 | built mean / p95 | spent / estimate (within 1.5x) | fixed design of equal accuracy |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		s := r.Summary
		est := "–"
		if s.Estimated*10 >= s.Sessions { // a median of a handful says nothing
			est = fmt.Sprintf("%.2f (%.0f%%)", s.EstRatio, 100*float64(s.EstWithin)/float64(s.Estimated))
			if s.EstHigh > 0 {
				est += fmt.Sprintf("; at most the upper figure: %.0f%%", 100*float64(s.EstUnderHigh)/float64(s.EstHigh))
			}
		}
		fixed := ""
		if r.FixedN > 0 {
			fixed = fmt.Sprintf("%d per side: %.0f runs (sequential spends %.2fx)", r.FixedN, r.Fixed.MeanRuns, s.MeanRuns/r.Fixed.MeanRuns)
		}
		missed := pct(s.Rate(s.NoRegression))
		rng := fmt.Sprintf("%s (%d of %d)", pct(s.Rate(s.Ambiguous)), s.RangeHolds, s.Ambiguous)
		if r.Scenario.CulpritPos == 0 {
			missed, rng = "–", pct(s.Rate(s.FalseAlarm))+" (no culprit)"
		}
		note := ""
		if s.Second > 0 {
			note = fmt.Sprintf(" (%d named the second)", s.Second)
		}
		if s.Errors > 0 {
			note += fmt.Sprintf(" (%d errors)", s.Errors)
		}
		fmt.Fprintf(&b, "| %s | %s | %s%s | %s | %s | %s | %.0f / %.0f | %.1f / %.0f | %s | %s |\n",
			r.Group, r.Name, pct(s.Rate(s.Correct)), note, pct(s.Rate(s.Wrong())), missed, rng,
			s.MeanRuns, s.P95Runs, s.MeanBuilt, s.P95Built, est, fixed)
	}
	return b.String()
}

func pct(x float64) string {
	if x == 0 {
		return "0%"
	}
	if x == 1 {
		return "100%"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}
