// Command bench-vs-sysbench measures perfbisect's built-in workload against real
// sysbench on one private server (Debian's mariadb-server, started through
// serverctl), with identical options, as issue 3's performance target asks. It
// prepares the tables once, then for every configuration (oltp_point_select and
// oltp_read_only, 1 and 2 threads, special and uniform by default) runs pairs of
// runs, sysbench and built-in in alternating order (ABBA), each as its own
// client process: `sysbench ... run` and `perfbisect bench ... run --format json`.
//
// Per configuration it prints the median tps of each, the ratio built-in /
// sysbench (median, min and max over the pairs), the server's work per
// transaction for each (SHOW GLOBAL STATUS deltas over each client process:
// Com_select, Com_stmt_execute, Com_begin, Com_commit, Handler_read_key,
// Handler_read_next, Bytes_received, Bytes_sent, per reported transaction),
// client CPU seconds (user+system of the client process) and server CPU seconds
// (mysqld's, over the client's life) per 1000 transactions, the client CPU ratio
// built-in / sysbench per pair (median, min and max: pairs run side by side, so
// the ratio survives the machine's drift better than the medians), and the
// client's peak RSS. A last
// line measures both clients' peak RSS at many threads (64 by default).
//
//	go run ./scripts/bench-vs-sysbench -pairs 7         # the table of docs/workload.md, ~20 minutes (5 pairs: ~17)
//	go run ./scripts/bench-vs-sysbench -pairs 3 -time 5s -configs oltp_read_only/2/uniform
//
// The numbers are only meaningful on an otherwise idle machine: run nothing
// else meanwhile.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bench/sysbench"
	"github.com/perfbisect/perfbisect/serverctl"
	"github.com/perfbisect/perfbisect/stats"
)

// serverCnf keeps the whole data set in the buffer pool: the server's CPU is
// the bottleneck, as in the read-only reports this compares against.
const serverCnf = `[mysqld]
innodb_buffer_pool_size = 512M
innodb_log_file_size = 128M
innodb_flush_log_at_trx_commit = 2
skip_log_bin
max_connections = 300
max_prepared_stmt_count = 100000
`

// counters are the server's work per transaction compared between the clients.
var counters = []string{"Com_select", "Com_stmt_execute", "Com_begin", "Com_commit", "Handler_read_key", "Handler_read_next", "Bytes_received", "Bytes_sent"}

type config struct {
	workload string
	threads  int
	rand     string
}

func (c config) String() string { return fmt.Sprintf("%s/%d/%s", c.workload, c.threads, c.rand) }

// sample is one client run.
type sample struct {
	tps     float64
	txns    int64
	cpu     time.Duration // user+system of the client process
	srvCPU  time.Duration // user+system of mysqld over the client's life
	rssKB   int64         // peak RSS of the client process
	perTxn  map[string]float64
	wallDur time.Duration
}

func main() {
	pairs := flag.Int("pairs", 5, "pairs of runs per configuration")
	runTime := flag.Duration("time", 10*time.Second, "window of each run (whole seconds)")
	tableSize := flag.Int("table-size", 10000, "rows of the one table")
	configs := flag.String("configs", "", "WORKLOAD/THREADS/RAND,... (default: point_select and read_only x 1, 2 threads x special, uniform)")
	rssThreads := flag.Int("rss-threads", 64, "threads of the peak-RSS runs (0 to skip)")
	prefix := flag.String("prefix", "/usr", "install prefix of the server")
	flag.StringVar(&serverCPUs, "server-cpus", "", "CPUs of mysqld, as taskset -c (e.g. 1); empty: no placement")
	flag.StringVar(&clientCPUs, "client-cpus", "", "CPUs of each client process, as taskset -c (e.g. 0); empty: no placement")
	// go run ./scripts/bench-vs-sysbench -server-cpus 1 -client-cpus 0: docs/workload.md's placed table.
	flag.Parse()
	cs, err := parseConfigs(*configs)
	if err == nil {
		err = run(cs, *pairs, *runTime, *tableSize, *rssThreads, *prefix)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-vs-sysbench:", err)
		os.Exit(1)
	}
}

func parseConfigs(s string) ([]config, error) {
	if s == "" {
		var cs []config
		for _, w := range []string{"oltp_point_select", "oltp_read_only"} {
			for _, th := range []int{1, 2} {
				for _, r := range []string{"special", "uniform"} {
					cs = append(cs, config{w, th, r})
				}
			}
		}
		return cs, nil
	}
	var cs []config
	for _, f := range strings.Split(s, ",") {
		p := strings.Split(f, "/")
		if len(p) != 3 {
			return nil, fmt.Errorf("-configs %q: want WORKLOAD/THREADS/RAND", f)
		}
		th, err := strconv.Atoi(p[1])
		if err != nil {
			return nil, fmt.Errorf("-configs %q: threads: %v", f, err)
		}
		cs = append(cs, config{p[0], th, p[2]})
	}
	return cs, nil
}

func run(cs []config, pairs int, runTime time.Duration, tableSize, rssThreads int, prefix string) error {
	ctx := context.Background()
	began := time.Now()
	if _, err := exec.LookPath("sysbench"); err != nil {
		return fmt.Errorf("sysbench is needed: apt-get install sysbench")
	}
	dir, err := os.MkdirTemp("", "bench-vs-sysbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	client := filepath.Join(dir, "perfbisect")
	if out, err := exec.Command("go", "build", "-o", client, "./cmd/perfbisect").CombinedOutput(); err != nil {
		return fmt.Errorf("build perfbisect (run this from the repository root): %v\n%s", err, out)
	}
	in, err := serverctl.FindInstall(ctx, prefix)
	if err != nil {
		return err
	}
	cnf := filepath.Join(dir, "server.cnf")
	if err := os.WriteFile(cnf, []byte(serverCnf), 0o644); err != nil {
		return err
	}
	o := serverctl.Options{Install: in, OptionFile: cnf, RunDir: filepath.Join(dir, "run")}
	if o.CPUs, err = serverctl.ParseCPUList(serverCPUs); err != nil {
		return fmt.Errorf("-server-cpus: %w", err)
	}
	if _, err := serverctl.ParseCPUList(clientCPUs); err != nil {
		return fmt.Errorf("-client-cpus: %w", err)
	}
	fmt.Printf("placement: server cpus %q, client cpus %q (empty: the scheduler's choice)\n", serverCPUs, clientCPUs)
	if err := serverctl.Initialize(ctx, o); err != nil {
		return err
	}
	srv, err := serverctl.Start(ctx, o)
	if err != nil {
		return err
	}
	defer srv.Stop(context.Background())
	conn := bench.Connection{Socket: srv.Socket(), User: "root", DB: "sbtest"}

	base := bench.DefaultOptions()
	base.TableSize, base.Time = tableSize, runTime
	prep := base
	if err := bench.Prepare(ctx, conn.DSN(), prep); err != nil {
		return err
	}
	host := serverctl.HostFacts(dir)
	fmt.Printf("server %s %s; %s, %d CPUs; 1 table of %d rows; %d pair(s) of %s runs per configuration, alternating order\n\n",
		in.Flavor, in.Version, host.CPUModel, host.CPUs, tableSize, pairs, runTime)

	type row struct {
		c         config
		sb, bi    []sample
		ratios    []float64 // built-in tps / sysbench tps, per pair
		cpuRatios []float64 // built-in / sysbench client CPU per transaction, per pair
	}
	var rows []row
	for _, c := range cs {
		o := base
		o.Workload, o.Threads, o.RandType = c.workload, c.threads, c.rand
		r := row{c: c}
		for p := 0; p < pairs; p++ {
			order := []string{"sysbench", "built-in"}
			if p%2 == 1 {
				order = []string{"built-in", "sysbench"}
			}
			var s, b sample
			for _, who := range order {
				x, err := measure(ctx, srv, who, client, conn, o)
				if err != nil {
					return fmt.Errorf("%s %s: %w", c, who, err)
				}
				if who == "sysbench" {
					s = x
				} else {
					b = x
				}
			}
			r.sb, r.bi = append(r.sb, s), append(r.bi, b)
			ratio, cpuRatio := b.tps/s.tps, cpuPerK(b)/cpuPerK(s)
			r.ratios = append(r.ratios, ratio)
			r.cpuRatios = append(r.cpuRatios, cpuRatio)
			fmt.Fprintf(os.Stderr, "%s pair %d: sysbench %.1f tps, built-in %.1f tps (%.3f); client CPU per txn ratio %.3f\n",
				c, p+1, s.tps, b.tps, ratio, cpuRatio)
		}
		rows = append(rows, r)
	}

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 1, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintln(tw, "workload\tthreads\trand\tsysbench tps\tbuilt-in tps\tratio (min-max)\tclient CPU s/1000 txn sysbench\tbuilt-in\tclient CPU ratio (min-max)\tserver CPU s/1000 txn sysbench\tbuilt-in\tpeak RSS MB sysbench\tbuilt-in\t")
	// CPU per 1000 transactions with three significant digits, trailing zeros
	// kept (%#.3g): a point select costs 0.015 to 0.018 s per 1000 here, and three
	// decimals would round away the difference between the clients.
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.0f\t%s\t%#.3g\t%#.3g\t%s\t%#.3g\t%#.3g\t%.1f\t%.1f\t\n",
			r.c.workload, r.c.threads, r.c.rand, medianOf(r.sb, tpsOf), medianOf(r.bi, tpsOf), spread(r.ratios),
			medianOf(r.sb, cpuPerK), medianOf(r.bi, cpuPerK), spread(r.cpuRatios),
			medianOf(r.sb, srvPerK), medianOf(r.bi, srvPerK),
			medianOf(r.sb, rssMB), medianOf(r.bi, rssMB))
	}
	tw.Flush()

	fmt.Printf("\nServer work per transaction (median over the runs; SHOW GLOBAL STATUS deltas over each client process / its transactions):\n")
	tw = tabwriter.NewWriter(os.Stdout, 0, 0, 1, ' ', tabwriter.AlignRight|tabwriter.Debug)
	fmt.Fprintf(tw, "configuration\tclient\t%s\t\n", strings.Join(counters, "\t"))
	for _, r := range rows {
		for _, side := range []struct {
			name string
			ss   []sample
		}{{"sysbench", r.sb}, {"built-in", r.bi}} {
			fmt.Fprintf(tw, "%s\t%s\t", r.c, side.name)
			for _, k := range counters {
				fmt.Fprintf(tw, "%.2f\t", medianOf(side.ss, func(s sample) float64 { return s.perTxn[k] }))
			}
			fmt.Fprintln(tw)
		}
	}
	tw.Flush()

	if rssThreads > 0 {
		o := base
		o.Workload, o.Threads, o.RandType, o.Time = "oltp_read_only", rssThreads, "uniform", min(runTime, 5*time.Second)
		s, err := measure(ctx, srv, "sysbench", client, conn, o)
		if err != nil {
			return fmt.Errorf("%d threads sysbench: %w", rssThreads, err)
		}
		b, err := measure(ctx, srv, "built-in", client, conn, o)
		if err != nil {
			return fmt.Errorf("%d threads built-in: %w", rssThreads, err)
		}
		fmt.Printf("\nPeak RSS at %d threads (oltp_read_only, %s): sysbench %.1f MB, built-in %.1f MB\n",
			rssThreads, o.Time, rssMB(s), rssMB(b))
	}
	fmt.Printf("\nThe whole run took %s.\n", time.Since(began).Round(time.Second))
	return nil
}

// spread formats per-pair ratios as "median (min-max)".
func spread(xs []float64) string {
	return fmt.Sprintf("%.3f (%.3f-%.3f)", stats.Median(xs), slices.Min(xs), slices.Max(xs))
}

func tpsOf(s sample) float64   { return s.tps }
func cpuPerK(s sample) float64 { return s.cpu.Seconds() * 1000 / float64(s.txns) }
func srvPerK(s sample) float64 { return s.srvCPU.Seconds() * 1000 / float64(s.txns) }
func rssMB(s sample) float64   { return float64(s.rssKB) / 1024 }

func medianOf(ss []sample, f func(sample) float64) float64 {
	xs := make([]float64, len(ss))
	for i, s := range ss {
		xs[i] = f(s)
	}
	return stats.Median(xs)
}

// serverCPUs and clientCPUs are -server-cpus and -client-cpus.
var serverCPUs, clientCPUs string

// pinned returns a command that runs name with args on clientCPUs (taskset
// execs it: the same process, so its rusage is the client's).
func pinned(ctx context.Context, name string, args ...string) *exec.Cmd {
	if clientCPUs == "" {
		return exec.CommandContext(ctx, name, args...)
	}
	return exec.CommandContext(ctx, "taskset", append([]string{"-c", clientCPUs, name}, args...)...)
}

// measure runs one client process (sysbench, or perfbisect bench --format json)
// for o and reads its report, its rusage and the server's status deltas.
func measure(ctx context.Context, srv *serverctl.Server, who, client string, conn bench.Connection, o bench.Options) (sample, error) {
	var cmd *exec.Cmd
	if who == "sysbench" {
		args, err := sysbench.Args(o, conn, "run")
		if err != nil {
			return sample{}, err
		}
		cmd = pinned(ctx, "sysbench", args...)
	} else {
		args := []string{"bench", "--format", "json", o.Workload, "--mysql-socket=" + conn.Socket, "--mysql-user=" + conn.User,
			"--mysql-db=" + conn.DB, fmt.Sprintf("--tables=%d", o.Tables), fmt.Sprintf("--table-size=%d", o.TableSize),
			fmt.Sprintf("--threads=%d", o.Threads), fmt.Sprintf("--time=%d", int(o.Time/time.Second)),
			"--rand-type=" + o.RandType, "run"}
		cmd = pinned(ctx, client, args...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	before, err := srv.GlobalStatus(ctx)
	if err != nil {
		return sample{}, err
	}
	srv0, err := srv.CPUTime()
	if err != nil {
		return sample{}, err
	}
	began := time.Now()
	if err := cmd.Run(); err != nil {
		return sample{}, fmt.Errorf("%v: %s%s", err, errb.String(), lastLines(out.String(), 5))
	}
	wall := time.Since(began)
	srv1, err := srv.CPUTime()
	if err != nil {
		return sample{}, err
	}
	after, err := srv.GlobalStatus(ctx)
	if err != nil {
		return sample{}, err
	}
	var s sample
	s.wallDur = wall
	if who == "sysbench" {
		r, err := sysbench.ParseReport(out.Bytes(), o)
		if err != nil {
			return sample{}, err
		}
		s.tps, s.txns = r.TPS, r.Events
	} else {
		var doc struct {
			Result struct {
				TPS          float64
				Transactions int64
			}
		}
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			return sample{}, fmt.Errorf("perfbisect bench output: %v", err)
		}
		s.tps, s.txns = doc.Result.TPS, doc.Result.Transactions
	}
	if s.txns == 0 {
		return sample{}, fmt.Errorf("no transactions")
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	s.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	s.srvCPU = srv1 - srv0
	s.rssKB = ru.Maxrss
	s.perTxn = map[string]float64{}
	for _, k := range counters {
		s.perTxn[k] = float64(after[k]-before[k]) / float64(s.txns)
	}
	return s, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
