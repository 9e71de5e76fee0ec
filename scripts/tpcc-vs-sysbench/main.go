// Command tpcc-vs-sysbench measures perfbisect's built-in TPC-C (--workload
// tpcc) against Percona-Lab's sysbench-tpcc under real sysbench, side by
// side on one private server (Debian's mariadb-server, started through
// serverctl) at the same scale and threads. It prepares both data sets
// (and prints what each prepare took: what loading the warehouses costs a
// revision), then runs pairs of runs in alternating order (ABBA), each as
// its own client process (perfbisect bench ... run), and prints per pair
// and as medians: tpmC (New-Order transactions committed per minute,
// counted the same way for both: the rows the run added to the orders
// table, over the window), the ratio built-in / sysbench-tpcc, and the
// client's CPU time (user+system of the client process, sysbench's
// included) per New-Order.
//
//	git clone https://github.com/Percona-Lab/sysbench-tpcc /tmp/sysbench-tpcc
//	go run ./scripts/tpcc-vs-sysbench -sysbench-tpcc /tmp/sysbench-tpcc -pairs 3
//
// The numbers are only meaningful on an otherwise idle machine.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/perfbisect/perfbisect/serverctl"
	"github.com/perfbisect/perfbisect/stats"
)

const serverCnf = `[mysqld]
innodb_buffer_pool_size = 1G
innodb_log_file_size = 256M
innodb_flush_log_at_trx_commit = 2
skip_log_bin
max_connections = 300
`

func main() {
	tpccDir := flag.String("sysbench-tpcc", "", "the directory of Percona-Lab's sysbench-tpcc (tpcc.lua and the files it requires)")
	pairs := flag.Int("pairs", 3, "pairs of runs (ABBA order)")
	runTime := flag.Int("time", 20, "seconds per run")
	threads := flag.Int("threads", 2, "client threads")
	warehouses := flag.Int("warehouses", 1, "warehouses (sysbench-tpcc's --scale)")
	flag.Parse()
	if *tpccDir == "" {
		fmt.Fprintln(os.Stderr, "tpcc-vs-sysbench: name the sysbench-tpcc directory with -sysbench-tpcc (git clone https://github.com/Percona-Lab/sysbench-tpcc)")
		os.Exit(2)
	}
	if err := run(*tpccDir, *pairs, *runTime, *threads, *warehouses); err != nil {
		fmt.Fprintln(os.Stderr, "tpcc-vs-sysbench:", err)
		os.Exit(1)
	}
}

// client is one side: its perfbisect bench arguments and where its orders are.
type client struct {
	name   string
	args   []string
	orders string // schema.table
}

func run(tpccDir string, pairs, runTime, threads, warehouses int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "tpcc-vs-sysbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "perfbisect")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/perfbisect").CombinedOutput(); err != nil {
		return fmt.Errorf("go build (run from the repository's root): %v\n%s", err, out)
	}
	in, err := serverctl.FindInstall(ctx, "/usr")
	if err != nil {
		return err
	}
	cnf := filepath.Join(dir, "server.cnf")
	if err := os.WriteFile(cnf, []byte(serverCnf), 0o644); err != nil {
		return err
	}
	o := serverctl.Options{Install: in, OptionFile: cnf, RunDir: filepath.Join(dir, "run")}
	if err := serverctl.Initialize(ctx, o); err != nil {
		return err
	}
	srv, err := serverctl.Start(ctx, o)
	if err != nil {
		return err
	}
	defer srv.Stop(context.Background())
	db, err := sql.Open("mysql", srv.DSN(""))
	if err != nil {
		return err
	}
	defer db.Close()
	conn := func(schema string) []string {
		return []string{"bench", "--mysql-socket=" + srv.Socket(), "--mysql-user=root", "--mysql-db=" + schema, "--threads=" + strconv.Itoa(threads)}
	}
	abs, err := filepath.Abs(filepath.Join(tpccDir, "tpcc.lua"))
	if err != nil {
		return err
	}
	clients := []client{
		{"built-in tpcc", append(conn("tpcc"), "tpcc", "--warehouses="+strconv.Itoa(warehouses)), "tpcc.orders"},
		{"sysbench-tpcc", append(conn("sbt"), abs, "--scale="+strconv.Itoa(warehouses), "--tables=1", "--use_fk=0"), "sbt.orders1"},
	}
	fmt.Printf("%s, %d warehouse(s), %d threads, %d s runs, %d pairs (ABBA)\n", in.Version, warehouses, threads, runTime, pairs)
	for _, c := range clients {
		began := time.Now()
		if out, err := exec.Command(bin, append(c.args, "prepare")...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s prepare: %v\n%s", c.name, err, out)
		}
		fmt.Printf("prepare %-14s %6.1f s\n", c.name, time.Since(began).Seconds())
	}
	tpmc := map[string][]float64{}
	cpu := map[string][]float64{}
	var ratios []float64
	for p := range pairs {
		order := []int{0, 1}
		if p%2 == 1 {
			order = []int{1, 0}
		}
		got := map[string]float64{}
		for _, i := range order {
			c := clients[i]
			var before, after int64
			if err := db.QueryRow("SELECT COUNT(*) FROM " + c.orders).Scan(&before); err != nil {
				return err
			}
			cmd := exec.Command(bin, append(c.args, "--time="+strconv.Itoa(runTime), "run")...)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%s run: %v\n%s", c.name, err, out)
			}
			if err := db.QueryRow("SELECT COUNT(*) FROM " + c.orders).Scan(&after); err != nil {
				return err
			}
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			clientCPU := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			newOrders := after - before
			got[c.name] = float64(newOrders) / (float64(runTime) / 60)
			tpmc[c.name] = append(tpmc[c.name], got[c.name])
			cpu[c.name] = append(cpu[c.name], float64(clientCPU.Microseconds())/float64(max(newOrders, 1)))
			fmt.Printf("pair %d %-14s tpmC %8.0f  client CPU %6.0f us/New-Order\n", p+1, c.name, got[c.name], cpu[c.name][len(cpu[c.name])-1])
		}
		ratios = append(ratios, got[clients[0].name]/got[clients[1].name])
	}
	slices.Sort(ratios)
	fmt.Printf("median tpmC: built-in %.0f, sysbench-tpcc %.0f; ratio built-in/sysbench-tpcc %.2f (pairs %.2f..%.2f)\n",
		stats.Median(tpmc[clients[0].name]), stats.Median(tpmc[clients[1].name]), stats.Median(ratios), ratios[0], ratios[len(ratios)-1])
	fmt.Printf("median client CPU per New-Order: built-in %.0f us, sysbench-tpcc %.0f us\n",
		stats.Median(cpu[clients[0].name]), stats.Median(cpu[clients[1].name]))
	return nil
}
