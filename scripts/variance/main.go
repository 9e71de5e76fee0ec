// Command variance splits the spread of a server's runs into its levels: per
// run, per datadir snapshot and per build (an A/A experiment). Every SIDE is
// one build of the same server: a revision of REPO (built, or taken from the
// build cache) or an installed server's directory (written with a /: a
// relinked copy of a build, a binary tarball). Each side gets -snapshots
// datadir snapshots, each prepared in a state directory of its own exactly
// as a bisection prepares one per revision, and every (side, snapshot) cell
// is measured -runs times, round-robin (one run of every cell, then the
// next round, each round starting at the next cell) so that a machine that
// drifts moves them all alike.
//
//	go run ./scripts/variance [flags] REPO SIDE [SIDE...]
//	go run ./scripts/variance -snapshots 4 -runs 12 /tmp/fixture good
//	go run ./scripts/variance -build-state ~/rt/state ~/rt/mariadb-10.0 mariadb-10.0.22 ./relinked-1/ unused-fn
//
// It prints each cell's median tps and CV, each side's shift against the
// first (Hodges-Lehmann over all its runs, 95%), each snapshot's shift
// against its side's first snapshot, and the nested random-effects split of
// log tps by the method of moments: the SD per run, per snapshot and per
// build, each level's F test, and the resolution (the 95% half-width of one
// snapshot's, or one build's, level against another's). A level whose
// cells vary no more than the level below explains gets 0.
//
// Flags: -snapshots K (2), -runs N per snapshot (10), -my-cnf FILE,
// -workload ARGS (sysbench-style options, default the e2e tests' small
// workload), -server-cpus and -client-cpus (as start's), -build-state DIR
// (the build cache to use and keep: perfbisect build's --state-dir; default
// a temporary one), -unsettled (prepare the snapshots as perfbisect did
// before it settled them: no ANALYZE TABLE, InnoDB's fast shutdown; to
// measure what that cost), -keep
// (keep the state directories and print where they are). It starts
// servers: run it on an idle machine, never beside another measurement or
// a build.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bench/sysbench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/serverctl"
	"github.com/perfbisect/perfbisect/stats"
)

const defaultWorkload = "--threads=2 --tables=1 --time=2 --warmup-time=1 --table-size=100000 --range-size=1000 --rand-type=uniform"

type options struct {
	snapshots, runs int
	cnf, workload   string
	buildState      string
	unsettled, keep bool
	cpus            [2]serverctl.CPUList
}

func main() {
	var o options
	flag.IntVar(&o.snapshots, "snapshots", 2, "datadir snapshots per side")
	flag.IntVar(&o.runs, "runs", 10, "runs per snapshot")
	flag.StringVar(&o.cnf, "my-cnf", "", "the option file every server gets")
	flag.StringVar(&o.workload, "workload", defaultWorkload, "workload options (sysbench style)")
	flag.StringVar(&o.buildState, "build-state", "", "the build cache's state directory (perfbisect build --state-dir); default: a temporary one")
	flag.BoolVar(&o.unsettled, "unsettled", false, "prepare snapshots as perfbisect did before 2026-12-04: no ANALYZE TABLE, InnoDB's fast shutdown (measure.Config.Unsettled)")
	flag.BoolVar(&o.keep, "keep", false, "keep the state directories")
	serverCPUs := flag.String("server-cpus", "", "CPUs of the server, as for taskset -c (\"\": all)")
	clientCPUs := flag.String("client-cpus", "", "CPUs of the client (\"\": all)")
	flag.Parse()
	if msg := checkCounts(flag.NArg()-1, o); msg != "" {
		fmt.Fprintf(os.Stderr, "variance: %s\nusage: variance [-snapshots K] [-runs N] [-my-cnf FILE] [-workload ARGS] [-server-cpus LIST] [-client-cpus LIST] [-build-state DIR] [-unsettled] [-keep] REPO SIDE [SIDE...]\n", msg)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	for i, v := range []string{*serverCPUs, *clientCPUs} {
		if o.cpus[i], err = serverctl.ParseCPUList(v); err != nil {
			fmt.Fprintln(os.Stderr, "variance:", err)
			os.Exit(2)
		}
	}
	if err := run(ctx, flag.Arg(0), flag.Args()[1:], o); err != nil {
		if ctx.Err() != nil {
			err = errors.New("interrupted (its servers stopped, its state directories removed unless -keep)")
		}
		fmt.Fprintln(os.Stderr, "variance:", err)
		os.Exit(1)
	}
}

// checkCounts says what is wrong with the number of sides and the -runs and
// -snapshots counts ("" when nothing).
func checkCounts(sides int, o options) string {
	switch {
	case sides < 1:
		return "no SIDE given: name the revisions or installed servers to measure after REPO"
	case o.runs < 3:
		return fmt.Sprintf("-runs %d: at least 3 runs per snapshot (a cell's spread needs them; 6 or more give a median interval)", o.runs)
	case o.snapshots < 1:
		return fmt.Sprintf("-snapshots %d: at least 1", o.snapshots)
	case sides == 1 && o.snapshots < 2:
		return "one side needs -snapshots 2 or more: there is nothing else to split"
	}
	return ""
}

// sideKey is the subject key of the i-th side (its argument may hold a /,
// which a key, a directory name in the state directory, must not).
func sideKey(i int) string { return fmt.Sprintf("side-%d", i+1) }

// sides reads the SIDE arguments, by sideKey: an existing directory written
// with a / is an installed server; anything else a revision of repo.
func sides(ctx context.Context, repo *git.Repository, args []string, of serverctl.OptionFile) (map[string]measure.Side, error) {
	out := map[string]measure.Side{}
	seen := map[string]bool{}
	for i, a := range args {
		if seen[a] {
			return nil, fmt.Errorf("side %s given twice: a second snapshot of it is -snapshots' to ask for", a)
		}
		seen[a] = true
		if strings.Contains(a, "/") {
			if st, err := os.Stat(a); err == nil && st.IsDir() {
				abs, err := filepath.Abs(a)
				if err != nil {
					return nil, err
				}
				if _, err := serverctl.FindInstall(ctx, abs); err != nil {
					return nil, fmt.Errorf("side %s: not an installed server: %w", a, err)
				}
				out[sideKey(i)] = measure.Side{Name: a, Basedir: abs, OptionFile: of}
				continue
			}
		}
		c, err := bisect.Resolve(repo, a)
		if err != nil {
			return nil, fmt.Errorf("side %s: %w", a, err)
		}
		out[sideKey(i)] = measure.Side{Name: a, Commit: c, OptionFile: of}
	}
	return out, nil
}

func run(ctx context.Context, repoPath string, names []string, o options) error {
	repo, err := bisect.OpenRepo(repoPath)
	if err != nil {
		return err
	}
	for _, w := range strings.Fields(o.workload) {
		if !strings.HasPrefix(w, "--") {
			return fmt.Errorf("-workload %q: %q is not an option: give sysbench-style --name=value options, such as --threads=2 --table-size=100000", o.workload, w)
		}
	}
	inv, err := sysbench.ParseArgs(append(strings.Fields(o.workload), "run"))
	if err != nil {
		return fmt.Errorf("-workload: %w", err)
	}
	of, err := serverctl.LoadOptionFile(o.cnf)
	if err != nil {
		return fmt.Errorf("-my-cnf: %w", err)
	}
	sd, err := sides(ctx, repo, names, of)
	if err != nil {
		return err
	}
	root, err := os.MkdirTemp("", "variance-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "state directories under", root)
	} else {
		defer os.RemoveAll(root)
	}
	buildState := o.buildState
	if buildState == "" {
		buildState = filepath.Join(root, "build")
	}
	builder := &build.Builder{Repo: repo, StateDir: buildState, Log: os.Stderr}
	// One measurer per snapshot: each prepares its own snapshot of every
	// side in its own state directory; the builds are shared.
	ms := make([]*measure.Measurer, o.snapshots)
	for j := range ms {
		ms[j] = measure.New(measure.Config{Builder: builder, StateDir: filepath.Join(root, fmt.Sprintf("snapshot-%d", j+1)),
			Sides: sd, Workload: bench.OLTP{Options: inv.Options}, Log: os.Stderr,
			ServerCPUs: o.cpus[0], ClientCPUs: o.cpus[1], Unsettled: o.unsettled})
		for i, n := range names {
			if err := ms[j].Prepare(ctx, sideKey(i)); err != nil {
				return fmt.Errorf("prepare %s, snapshot %d: %w", n, j+1, err)
			}
		}
	}
	type cell struct{ side, snap int }
	var cells []cell
	for i := range names {
		for j := range ms {
			cells = append(cells, cell{i, j})
		}
	}
	tps := make([][][]float64, len(names)) // [side][snapshot][run]
	var seq []timed
	for i := range tps {
		tps[i] = make([][]float64, o.snapshots)
	}
	for r := 0; r < o.runs; r++ {
		for k := range cells {
			c := cells[(r+k)%len(cells)]
			got, err := ms[c.snap].Measure(ctx, sideKey(c.side), 1)
			if err != nil {
				return fmt.Errorf("%s, snapshot %d, run %d: %w", names[c.side], c.snap+1, r+1, err)
			}
			tps[c.side][c.snap] = append(tps[c.side][c.snap], got[0].TPS)
			clientCPU, _ := strconv.ParseFloat(got[0].Facts["client_cpu_us_txn"], 64)
			seq = append(seq, timed{cell: c.side*o.snapshots + c.snap, tps: got[0].TPS, serverCPU: got[0].CPUPerTxn.Seconds() * 1e6, clientCPU: clientCPU})
			f := got[0].Facts
			fmt.Fprintf(os.Stderr, "%s snapshot %d run %d: %.1f tps (steal %ss, other processes %ss, client CPU %sus/txn)\n",
				names[c.side], c.snap+1, r+1, got[0].TPS, f["steal_s"], f["other_cpu_s"], f["client_cpu_us_txn"])
		}
	}
	report(names, tps, o)
	gauges(seq)
	return nil
}

// timed is one run in the order it was measured: its cell, tps, and the
// server's and the built-in client's CPU per transaction (µs; 0 unknown).
type timed struct {
	cell                      int
	tps, serverCPU, clientCPU float64
}

// gauges prints how the runs' spread goes with the machine's own speed: the
// correlation of each run's log tps (less its cell's mean) with its server's
// and its client's log CPU per transaction, and the correlation of
// successive runs' residuals (slow periods that span several runs).
func gauges(seq []timed) {
	mean := map[int][]float64{}
	for _, r := range seq {
		mean[r.cell] = append(mean[r.cell], math.Log(r.tps))
	}
	res := make([]float64, len(seq))
	var srv, cli, cliRaw, resC []float64
	for i, r := range seq {
		res[i] = math.Log(r.tps) - stat.Mean(mean[r.cell], nil)
		if r.serverCPU > 0 && r.clientCPU > 0 {
			resC = append(resC, res[i])
			srv = append(srv, math.Log(r.serverCPU))
			cli = append(cli, math.Log(r.clientCPU))
			cliRaw = append(cliRaw, r.clientCPU)
		}
	}
	fmt.Printf("\nruns in the order measured (log tps less its cell's mean): lag-1 correlation %.2f", stat.Correlation(res[1:], res[:len(res)-1], nil))
	if len(resC) > 2 {
		fmt.Printf("; with the server's CPU per transaction %.2f, with the client's %.2f (client CPU per transaction: median %.0f us, CV %.1f%%)",
			stat.Correlation(resC, srv, nil), stat.Correlation(resC, cli, nil), stats.Median(cliRaw), 100*stats.RobustCV(cliRaw))
	}
	fmt.Println()
}

// report prints the cells, the shifts and the variance split.
func report(names []string, tps [][][]float64, o options) {
	w := 9
	for _, n := range names {
		w = max(w, len(n))
	}
	fmt.Printf("%s, %s each, %s per snapshot, round-robin\n", plural(len(names), "side"), plural(o.snapshots, "snapshot"), plural(o.runs, "run"))
	fmt.Printf("%-*s %8s %9s %21s %7s\n", w, "side", "snapshot", "median", "95% interval", "CV")
	for i, side := range tps {
		for j, xs := range side {
			interval := "(too few runs)"
			if lo, hi, ok := stats.MedianCI(xs, 0.95); ok {
				interval = fmt.Sprintf("%.1f - %.1f", lo, hi)
			}
			fmt.Printf("%-*s %8d %9.1f %21s %6.1f%%\n", w, names[i], j+1, stats.Median(xs), interval, 100*stats.RobustCV(xs))
		}
	}
	if len(names) > 1 {
		fmt.Printf("\nbuild shift against %s (all snapshots' runs; Hodges-Lehmann, 95%%)\n", names[0])
		base := flat(tps[0])
		for i := 1; i < len(names); i++ {
			fmt.Printf("%-*s %s\n", w, names[i], shiftText(stats.Shift(base, flat(tps[i]), 0.95)))
		}
	}
	if o.snapshots > 1 {
		fmt.Printf("\nsnapshot shift against the side's snapshot 1 (Hodges-Lehmann, 95%%)\n")
		for i, side := range tps {
			for j := 1; j < len(side); j++ {
				fmt.Printf("%-*s %d %s\n", w, names[i], j+1, shiftText(stats.Shift(side[0], side[j], 0.95)))
			}
		}
	}
	v := nestedSplit(logs(tps))
	fmt.Printf("\nvariance split of log tps (nested random effects, method of moments; relative SDs)\n")
	fmt.Printf("%-14s %7s %10s %12s\n", "level", "SD", "F test p", "resolution")
	fmt.Printf("%-14s %6.2f%%\n", "run", 100*v.Run)
	if o.snapshots > 1 {
		fmt.Printf("%-14s %6.2f%% %10.4f %10.2f%%\n", "snapshot", 100*v.Snapshot, v.PSnapshot, 100*v.ResSnapshot)
	}
	if len(names) > 1 {
		label := "build"
		if o.snapshots == 1 {
			label = "build+snapshot" // one snapshot per build: the two are not told apart
		}
		fmt.Printf("%-14s %6.2f%% %10.4f %10.2f%%\n", label, 100*v.Build, v.PBuild, 100*v.ResBuild)
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// shiftText is a Hodges-Lehmann shift with its interval, or a word on why
// there is none.
func shiftText(s stats.ShiftEstimate) string {
	if !s.Bounded() {
		return fmt.Sprintf("%+7.2f%%  (too few runs for an interval)", 100*s.Est)
	}
	return fmt.Sprintf("%+7.2f%%  %+7.2f%% .. %+6.2f%%", 100*s.Est, 100*s.Lo, 100*s.Hi)
}

func flat(xss [][]float64) []float64 {
	var out []float64
	for _, xs := range xss {
		out = append(out, xs...)
	}
	return out
}

func logs(tps [][][]float64) [][][]float64 {
	out := make([][][]float64, len(tps))
	for i, side := range tps {
		out[i] = make([][]float64, len(side))
		for j, xs := range side {
			for _, x := range xs {
				out[i][j] = append(out[i][j], math.Log(x))
			}
		}
	}
	return out
}

// split is a nested variance split: SDs per run, per snapshot (within a
// build) and per build, the F tests' p-values of the two upper levels, and
// their resolutions (the 95% half-width of the difference of two cells'
// means at that level, Student's t at the degrees of freedom of the mean
// square it is estimated from).
type split struct {
	Run, Snapshot, Build  float64
	PSnapshot, PBuild     float64
	ResSnapshot, ResBuild float64
}

// nestedSplit is the balanced two-level nested ANOVA of y[build][snapshot][run]
// (every build the same number of snapshots, every snapshot the same number
// of runs), by the method of moments; a component whose mean square is below
// the one beneath it is 0. With one snapshot per build the build level is
// tested against the runs; with one build there is no build level.
func nestedSplit(y [][][]float64) split {
	a, b, n := len(y), len(y[0]), len(y[0][0])
	var grand float64
	cellMean := make([][]float64, a)
	buildMean := make([]float64, a)
	for i := range y {
		cellMean[i] = make([]float64, b)
		for j := range y[i] {
			for _, x := range y[i][j] {
				cellMean[i][j] += x
			}
			cellMean[i][j] /= float64(n)
			buildMean[i] += cellMean[i][j]
		}
		buildMean[i] /= float64(b)
		grand += buildMean[i]
	}
	grand /= float64(a)
	var sse, ssb, ssa float64
	for i := range y {
		ssa += float64(b*n) * sq(buildMean[i]-grand)
		for j := range y[i] {
			ssb += float64(n) * sq(cellMean[i][j]-buildMean[i])
			for _, x := range y[i][j] {
				sse += sq(x - cellMean[i][j])
			}
		}
	}
	dfe, dfb, dfa := float64(a*b*(n-1)), float64(a*(b-1)), float64(a-1)
	mse := sse / dfe
	out := split{Run: math.Sqrt(mse), PSnapshot: math.NaN(), PBuild: math.NaN()}
	out.ResSnapshot = tQuantile(dfe) * math.Sqrt(2*mse/float64(n))
	below, dfBelow := mse, dfe // the mean square the build level is tested against
	if b > 1 {
		msb := ssb / dfb
		out.Snapshot = math.Sqrt(math.Max(0, (msb-mse)/float64(n)))
		out.PSnapshot = fTail(msb/mse, dfb, dfe)
		below, dfBelow = msb, dfb
	}
	if a > 1 {
		msa := ssa / dfa
		out.Build = math.Sqrt(math.Max(0, (msa-below)/float64(b*n)))
		out.PBuild = fTail(msa/below, dfa, dfBelow)
		out.ResBuild = tQuantile(dfBelow) * math.Sqrt(2*below/float64(b*n))
	}
	return out
}

// tQuantile is Student's t 97.5% quantile with df degrees of freedom: a
// 95% half-width in standard errors.
func tQuantile(df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975)
}

// fTail is P(F > f) for an F distribution with d1 and d2 degrees of freedom.
func fTail(f, d1, d2 float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return math.NaN()
	}
	return distuv.F{D1: d1, D2: d2}.Survival(f)
}

func sq(x float64) float64 { return x * x }
