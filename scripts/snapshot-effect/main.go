// Command snapshot-effect measures whether the prepared datadir snapshot a run
// is restored from changes the run's result: it builds one revision once,
// prepares K snapshots of it (each in a state directory of its own, exactly as
// a bisection prepares one per revision), then measures runs round-robin over
// the snapshots (run 1 of every snapshot, then run 2, ..., each round starting
// at the next snapshot) so that a machine that drifts moves them all alike. It prints per snapshot the runs' median
// tps with its 95% interval, and every pair's shift (Hodges-Lehmann, 95%
// interval) and Mann-Whitney p. If revisions were measured apart only by
// their snapshots, these shifts are what a bisection would mistake for a
// regression (the reliability issue's "good revision measured slow after
// resume").
//
//	go run ./scripts/snapshot-effect [flags] REPO REV
//	go run ./scripts/snapshot-effect -snapshots 3 -runs 12 /tmp/fixture good
//
// Flags: -snapshots K (3), -runs N per snapshot (12), -my-cnf FILE, -workload
// ARGS (sysbench-style options, default the e2e tests' small workload),
// -server-cpus and -client-cpus (as start's), -keep (keep the state
// directories and print where they are). Last it prints the variance split
// of log tps (one-way random effects): the run-to-run noise and the
// snapshot-to-snapshot component, each as a relative SD. It starts servers:
// run it on an idle machine, never beside another measurement or a build.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bench/sysbench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/serverctl"
	"github.com/perfbisect/perfbisect/stats"
)

const defaultWorkload = "--threads=2 --tables=1 --time=2 --warmup-time=1 --table-size=100000 --range-size=1000 --rand-type=uniform"

func main() {
	snapshots := flag.Int("snapshots", 3, "snapshots of the revision to prepare")
	runs := flag.Int("runs", 12, "runs per snapshot")
	cnf := flag.String("my-cnf", "", "the option file the server gets")
	workload := flag.String("workload", defaultWorkload, "workload options (sysbench style)")
	keep := flag.Bool("keep", false, "keep the state directories")
	serverCPUs := flag.String("server-cpus", "", "CPUs of the server, as for taskset -c (\"\": all)")
	clientCPUs := flag.String("client-cpus", "", "CPUs of the client (\"\": all)")
	flag.Parse()
	if flag.NArg() != 2 || *snapshots < 2 || *runs < 3 {
		fmt.Fprintln(os.Stderr, "usage: snapshot-effect [-snapshots K>=2] [-runs N>=3] [-my-cnf FILE] [-workload ARGS] [-keep] REPO REV")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cpus, err := placement(*serverCPUs, *clientCPUs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "snapshot-effect:", err)
		os.Exit(2)
	}
	if err := run(ctx, flag.Arg(0), flag.Arg(1), *snapshots, *runs, *cnf, *workload, *keep, cpus); err != nil {
		fmt.Fprintln(os.Stderr, "snapshot-effect:", err)
		os.Exit(1)
	}
}

// placement reads the -server-cpus and -client-cpus lists.
func placement(server, client string) ([2]serverctl.CPUList, error) {
	var out [2]serverctl.CPUList
	for i, v := range []string{server, client} {
		l, err := serverctl.ParseCPUList(v)
		if err != nil {
			return out, err
		}
		out[i] = l
	}
	return out, nil
}

func run(ctx context.Context, repoPath, rev string, k, n int, cnf, workload string, keep bool, cpus [2]serverctl.CPUList) error {
	repo, err := bisect.OpenRepo(repoPath)
	if err != nil {
		return err
	}
	c, err := bisect.Resolve(repo, rev)
	if err != nil {
		return err
	}
	inv, err := sysbench.ParseArgs(append(strings.Fields(workload), "run"))
	if err != nil {
		return fmt.Errorf("-workload: %w", err)
	}
	root, err := os.MkdirTemp("", "snapshot-effect-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintln(os.Stderr, "state directories under", root)
	} else {
		defer os.RemoveAll(root)
	}
	of, err := serverctl.LoadOptionFile(cnf)
	if err != nil {
		return fmt.Errorf("-my-cnf: %w", err)
	}
	builder := &build.Builder{Repo: repo, StateDir: filepath.Join(root, "build"), Log: os.Stderr}
	ms := make([]*measure.Measurer, k)
	for i := range ms {
		ms[i] = measure.New(measure.Config{Builder: builder, StateDir: filepath.Join(root, fmt.Sprintf("snapshot-%d", i+1)),
			OptionFile: of, Workload: bench.OLTP{Options: inv.Options}, Log: os.Stderr, ServerCPUs: cpus[0], ClientCPUs: cpus[1]})
		if err := ms[i].Prepare(ctx, c); err != nil {
			return fmt.Errorf("prepare snapshot %d: %w", i+1, err)
		}
	}
	tps := make([][]float64, k)
	for r := 0; r < n; r++ {
		// Each round starts at another snapshot, so that no snapshot is
		// always first after the previous round's last.
		for j := range ms {
			i := (r + j) % k
			m := ms[i]
			got, err := m.Measure(ctx, c, 1)
			if err != nil {
				return fmt.Errorf("snapshot %d, run %d: %w", i+1, r+1, err)
			}
			tps[i] = append(tps[i], got[0].TPS)
			fmt.Fprintf(os.Stderr, "snapshot %d run %d: %.1f tps\n", i+1, r+1, got[0].TPS)
		}
	}
	fmt.Printf("revision %.10s, %d snapshots, %d runs each, round-robin\n", c, k, n)
	fmt.Printf("%-9s %9s %21s %8s\n", "snapshot", "median", "95% interval", "CV")
	for i, xs := range tps {
		lo, hi, _ := stats.MedianCI(xs, 0.95)
		fmt.Printf("%-9d %9.1f %10.1f - %8.1f %7.1f%%\n", i+1, stats.Median(xs), lo, hi, 100*stats.RobustCV(xs))
	}
	fmt.Printf("\n%-5s %9s %23s %8s\n", "pair", "shift", "95% interval", "p")
	for i := 0; i < k; i++ {
		for j := i + 1; j < k; j++ {
			s := stats.Shift(tps[i], tps[j], 0.95)
			p, _ := stats.MannWhitney(tps[i], tps[j])
			fmt.Printf("%d-%d   %+8.1f%% %+10.1f%% .. %+6.1f%% %8.4f\n", i+1, j+1, 100*s.Est, 100*s.Lo, 100*s.Hi, p)
		}
	}
	run, snap := varianceSplit(tps)
	fmt.Printf("\nvariance split of log tps: per run %.2f%%, per snapshot %.2f%% (relative SDs; one-way random effects)\n", 100*run, 100*snap)
	return nil
}

// varianceSplit is the one-way random-effects split of log values by group
// (equal or unequal sizes): the SD within a group (per run) and the SD of
// the groups' true levels (per snapshot; 0 when the groups' means vary no
// more than the runs' noise explains), by the method of moments.
func varianceSplit(groups [][]float64) (within, between float64) {
	var sw, grand float64
	var dfw, total int
	means := make([]float64, len(groups))
	for i, g := range groups {
		var m float64
		for _, x := range g {
			m += math.Log(x)
		}
		m /= float64(len(g))
		means[i] = m
		for _, x := range g {
			d := math.Log(x) - m
			sw += d * d
		}
		dfw += len(g) - 1
		grand += m * float64(len(g))
		total += len(g)
	}
	grand /= float64(total)
	msw := sw / float64(dfw)
	var sb, n2 float64
	for i, g := range groups {
		d := means[i] - grand
		sb += float64(len(g)) * d * d
		n2 += float64(len(g) * len(g))
	}
	msb := sb / float64(len(groups)-1)
	n0 := (float64(total) - n2/float64(total)) / float64(len(groups)-1) // the effective group size
	return math.Sqrt(msw), math.Sqrt(math.Max(0, (msb-msw)/n0))
}
