// Command bench-vs-sysbench measures the built-in workload (package bench) and
// real sysbench side by side on one private server (Debian's mariadb-server via
// serverctl), interleaved round by round, and prints tps per run and medians.
// It produces the "built-in workload against sysbench" figure of the README:
//
//	go run ./scripts/bench-vs-sysbench -workload oltp_read_only -threads 2 -time 10s -rounds 3
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/serverctl"
	"github.com/perfbisect/perfbisect/stats"
)

func main() {
	workload := flag.String("workload", "oltp_read_only", "sysbench workload")
	threads := flag.Int("threads", 2, "client threads")
	tableSize := flag.Int("table-size", 10000, "rows")
	runTime := flag.Duration("time", 10*time.Second, "window per run")
	rounds := flag.Int("rounds", 3, "interleaved rounds")
	prefix := flag.String("prefix", "/usr", "install prefix of the server")
	flag.Parse()
	if err := run(*workload, *threads, *tableSize, *runTime, *rounds, *prefix); err != nil {
		fmt.Fprintln(os.Stderr, "bench-vs-sysbench:", err)
		os.Exit(1)
	}
}

var tpsRE = regexp.MustCompile(`transactions:\s+\d+\s+\(([\d.]+) per sec`)

func run(workload string, threads, tableSize int, runTime time.Duration, rounds int, prefix string) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "bench-vs-sysbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	in, err := serverctl.FindInstall(ctx, prefix)
	if err != nil {
		return err
	}
	o := serverctl.Options{Install: in, RunDir: filepath.Join(dir, "run")}
	if err := serverctl.Initialize(ctx, o); err != nil {
		return err
	}
	srv, err := serverctl.Start(ctx, o)
	if err != nil {
		return err
	}
	defer srv.Stop(ctx)
	bo := bench.DefaultOptions()
	bo.Workload, bo.Threads, bo.TableSize, bo.Time = workload, threads, tableSize, runTime
	if err := bench.Prepare(ctx, srv.DSN("sbtest"), bo); err != nil {
		return err
	}
	var ours, theirs []float64
	for r := 1; r <= rounds; r++ {
		cmd := exec.CommandContext(ctx, "sysbench", workload, "--db-driver=mysql", "--mysql-socket="+srv.Socket(),
			"--mysql-user=root", "--mysql-db=sbtest", "--tables=1", "--table-size="+strconv.Itoa(tableSize),
			"--threads="+strconv.Itoa(threads), "--time="+strconv.Itoa(int(runTime.Seconds())), "run")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("sysbench: %v: %s", err, out)
		}
		m := tpsRE.FindSubmatch(out)
		if m == nil {
			return fmt.Errorf("sysbench output without tps: %s", out)
		}
		tps, _ := strconv.ParseFloat(string(m[1]), 64)
		theirs = append(theirs, tps)
		res, err := bench.Run(ctx, srv.DSN("sbtest"), bo, bench.Hooks{})
		if err != nil {
			return err
		}
		ours = append(ours, res.TPS)
		fmt.Printf("round %d: sysbench %.1f tps, built-in %.1f tps\n", r, tps, res.TPS)
	}
	so, st := stats.Median(ours), stats.Median(theirs)
	fmt.Printf("%s, %d threads, %d rows, %s windows, %d rounds: sysbench median %.1f tps, built-in median %.1f tps (%+.1f%%)\n",
		workload, threads, tableSize, runTime, rounds, st, so, 100*(so/st-1))
	return nil
}
