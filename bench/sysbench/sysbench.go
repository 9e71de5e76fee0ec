package sysbench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bench/dial"
	"github.com/perfbisect/perfbisect/serverctl"
)

// The external driver: real sysbench 1.0 run with the same options, its report
// parsed into the same Result as the built-in workload's, so that the two can be
// compared number for number (and a user who trusts only sysbench can bisect
// with it).

// ErrNoSysbench is wrapped by Run when the sysbench binary cannot be run.
var ErrNoSysbench = errors.New("sysbench not found")

// ErrNotInSysbench is wrapped by Args for what sysbench 1.0 (the Debian
// package, 1.0.20) does not have: the zipfian distribution and
// --create-table-options (both 1.1), windows that are not whole seconds, and
// 0.4.12's --test=oltp (oltp_legacy).
var ErrNotInSysbench = errors.New("not available in sysbench 1.0")

// Supports returns nil when sysbench 1.0 can run o, and otherwise an
// error wrapping ErrNotInSysbench that names the option: 0.4's oltp_legacy,
// zipfian and --create-table-options (1.1), a percentile that is not a whole
// number from 1 to 100, a seed beyond 32 bits, windows of fractional seconds.
func Supports(o bench.Options) error {
	switch {
	case o.Workload == "oltp_legacy":
		return fmt.Errorf("%s: %w (sysbench 1.0 has no 0.4 --test=oltp); use the built-in driver", o.Workload, ErrNotInSysbench)
	case o.RandType == "zipfian":
		return fmt.Errorf("--rand-type=zipfian: %w (it came in 1.1); use the built-in driver", ErrNotInSysbench)
	case o.CreateTableOptions != "":
		return fmt.Errorf("--create-table-options: %w (it came in 1.1); use the built-in driver", ErrNotInSysbench)
	case o.Percentile != math.Trunc(o.Percentile) || o.Percentile < 1:
		return fmt.Errorf("--percentile=%g: %w: sysbench takes a whole percentile from 1 to 100", o.Percentile, ErrNotInSysbench)
	case o.RandSeed < 0 || o.RandSeed > math.MaxInt32:
		return fmt.Errorf("--rand-seed=%d: %w: sysbench takes a seed from 0 to %d", o.RandSeed, ErrNotInSysbench, math.MaxInt32)
	case o.Time%time.Second != 0 || o.Warmup%time.Second != 0:
		return fmt.Errorf("--time=%s --warmup-time=%s: %w: sysbench counts whole seconds", o.Time, o.Warmup, ErrNotInSysbench)
	}
	return nil
}

// Args returns the sysbench 1.0 arguments that run o against conn with
// command ("prepare", "run" or "cleanup"): the workload name first, then every
// option the built-in workload honours, with sysbench's names. sysbench 1.0 has
// no --warmup-time: a warm-up W runs as --time=W+T --report-checkpoints=W, whose
// last report covers only the window (see ParseReport). Runs also get
// --report-interval=1 for the per-second series. Errors are Supports'.
func Args(o bench.Options, conn bench.Connection, command string) ([]string, error) {
	if err := Supports(o); err != nil {
		return nil, err
	}
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	ignore := "none"
	if len(o.IgnoreErrors) > 0 {
		codes := make([]string, len(o.IgnoreErrors))
		for i, c := range o.IgnoreErrors {
			codes[i] = strconv.Itoa(int(c))
		}
		ignore = strings.Join(codes, ",")
	}
	args := append([]string{o.Workload, "--db-driver=mysql", "--db-ps-mode=auto"}, conn.Args()...)
	args = append(args, fmt.Sprintf("--tables=%d", o.Tables), fmt.Sprintf("--table-size=%d", o.TableSize),
		fmt.Sprintf("--threads=%d", o.Threads),
		"--auto-inc="+onOff(o.AutoInc), "--mysql-storage-engine="+o.StorageEngine)
	if command != "run" {
		return append(args, command), nil
	}
	secs := func(d time.Duration) int { return int(d / time.Second) }
	args = append(args, fmt.Sprintf("--time=%d", secs(o.Warmup+o.Time)), "--report-interval=1", "--events=0")
	if o.Warmup > 0 {
		args = append(args, fmt.Sprintf("--report-checkpoints=%d", secs(o.Warmup)))
	}
	args = append(args,
		fmt.Sprintf("--range-size=%d", o.RangeSize), fmt.Sprintf("--point-selects=%d", o.PointSelects),
		fmt.Sprintf("--simple-ranges=%d", o.SimpleRanges), fmt.Sprintf("--sum-ranges=%d", o.SumRanges),
		fmt.Sprintf("--order-ranges=%d", o.OrderRanges), fmt.Sprintf("--distinct-ranges=%d", o.DistinctRanges),
		fmt.Sprintf("--index-updates=%d", o.IndexUpdates), fmt.Sprintf("--non-index-updates=%d", o.NonIndexUpdates),
		fmt.Sprintf("--delete-inserts=%d", o.DeleteInserts),
		"--range-selects="+onOff(o.RangeSelects), "--skip-trx="+onOff(o.SkipTrx),
		"--rand-type="+o.RandType, fmt.Sprintf("--rand-seed=%d", o.RandSeed),
		fmt.Sprintf("--rand-spec-iter=%d", o.RandSpecIter), fmt.Sprintf("--rand-spec-pct=%d", o.RandSpecPct),
		fmt.Sprintf("--rand-spec-res=%d", o.RandSpecRes),
		"--rand-pareto-h="+strconv.FormatFloat(o.RandParetoH, 'g', -1, 64),
		"--percentile="+strconv.FormatFloat(o.Percentile, 'g', -1, 64),
		"--mysql-ignore-errors="+ignore, command)
	return args, nil
}

// Binary says how Run runs the sysbench binary.
type Binary struct {
	// Path is the binary; "sysbench" from PATH when empty.
	Path string
	// Output, if not nil, gets sysbench's own output (stdout and stderr) as it
	// comes.
	Output io.Writer
	// Hooks are called as sysbench reports (its output is made line-buffered
	// with coreutils' stdbuf): MeasureStart when the window opens
	// (its "Threads started!" line, or the checkpoint report at the end of the
	// warm-up), Interval every Options.ReportInterval of the window (sysbench's
	// per-second lines averaged, as Run calls it; never when it is 0), MeasureEnd when
	// its final report begins (the threads have stopped). So the caller can read
	// the server's CPU time and status around the window as with Run.
	Hooks bench.Hooks
}

// Run runs real sysbench with Args(o, conn, command) and, for
// "run", returns its parsed report (ParseReport); for "prepare" and
// "cleanup" a nil Result. A sysbench that fails returns a *Error with
// the last lines of its output (its FATAL lines name the statement and the
// server's message); a missing binary an error wrapping ErrNoSysbench; options
// sysbench 1.0 lacks an error wrapping ErrNotInSysbench. Cancelling ctx kills
// sysbench.
func Run(ctx context.Context, conn bench.Connection, o bench.Options, command string, sb Binary) (*bench.Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	args, err := Args(o, conn, command)
	if err != nil {
		return nil, err
	}
	out, cpu, err := sb.exec(ctx, conn, sysbenchCall{what: o.Workload, command: command, args: args,
		warm: int(o.Warmup / time.Second), reportInterval: o.ReportInterval})
	if err != nil || command != "run" {
		return nil, err
	}
	res, err := ParseReport(out, o)
	if res != nil {
		res.ClientCPU = cpu
	}
	return res, err
}

// Error is a sysbench process that ran and failed: against a live
// server, its FATAL lines name the statement and the server's message.
type Error struct {
	What    string // the workload: oltp_read_only, a script's path
	Command string // prepare, run, cleanup, help
	Err     error  // the process's exit
	Output  string // its last lines
}

// Error says "sysbench WHAT COMMAND: exit status N:" and the last lines.
func (e *Error) Error() string {
	return fmt.Sprintf("sysbench %s %s: %v:\n%s", e.What, e.Command, e.Err, e.Output)
}

// Unwrap returns the process's exit error.
func (e *Error) Unwrap() error { return e.Err }

// ErrScriptFailed is what a *Error is (errors.Is) when the script
// failed on its own, in Lua, and not on an answer of the server's: the
// user's script to fix, never a revision's fault.
var ErrScriptFailed = errors.New("the sysbench script failed on its own (a Lua error, not the server's)")

// sqlFailure matches sysbench's lines for a statement the server refused.
var sqlFailure = regexp.MustCompile(`SQL error|errno = \d+|mysql_\w+\(\) returned error|Lost connection|MySQL server has gone away|Can't connect`)

// Is reports ErrScriptFailed for a Lua error of the script's (a FATAL line
// at a .lua file's line) with no statement the server refused.
func (e *Error) Is(target error) bool {
	if target != ErrScriptFailed {
		return false
	}
	return regexp.MustCompile(`FATAL: .*\.lua:\d+: `).MatchString(e.Output) && !sqlFailure.MatchString(e.Output)
}

// sysbenchCall is one sysbench process: its arguments (a password among
// them goes to a private option file instead), its working directory and
// extra environment (a script's LUA_PATH), and for "run" the warm-up in
// whole seconds and the report interval of the hooks.
type sysbenchCall struct {
	what, command  string
	args           []string
	dir            string
	env            []string
	warm           int
	reportInterval time.Duration
}

// exec runs call against conn (its database created first for prepare) and
// returns sysbench's output and, for a run, sysbench's CPU time over the
// window (0 when it could not be read), calling sb.Hooks as a run reports.
func (sb Binary) exec(ctx context.Context, conn bench.Connection, call sysbenchCall) ([]byte, time.Duration, error) {
	bin := sb.Path
	if bin == "" {
		bin = "sysbench"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v; install it (apt-get install sysbench) or name it with --sysbench-path", ErrNoSysbench, err)
	}
	args, removePassword, err := passwordFile(call.args, conn)
	if err != nil {
		return nil, 0, err
	}
	defer removePassword()
	// sysbench's prepare needs the database; the built-in one creates it.
	admin, cfg, err := dial.DB(conn.DSN())
	if err != nil {
		return nil, 0, err
	}
	defer admin.Close()
	if call.command == "prepare" {
		if err := dial.EnsureDatabase(ctx, admin, cfg); err != nil {
			return nil, 0, fmt.Errorf("sysbench %s prepare (%s): %w", call.what, conn, err)
		}
	}
	// The server's connections before sysbench starts: a cancelled sysbench
	// is killed, but its server threads go on with their statements (a lock
	// wait) until they next talk to it; the new ones are killed, as Run does.
	before := map[int64]bool{}
	if call.command == "run" {
		ids, err := dial.ServerThreads(ctx, cfg)
		if err != nil {
			return nil, 0, fmt.Errorf("sysbench %s run (%s): %w", call.what, conn, err)
		}
		for _, id := range ids {
			before[id] = true
		}
	}
	cmd, pr, err := startSysbench(ctx, path, args, call)
	if err != nil {
		return nil, 0, err
	}
	out, cpu := sb.follow(pr, call, cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			if call.command == "run" {
				ids, _ := dial.ServerThreads(context.Background(), cfg)
				dial.Kill(cfg, slices.DeleteFunc(ids, func(id int64) bool { return before[id] }))
			}
			return nil, 0, ctx.Err()
		}
		return nil, 0, &Error{What: call.what, Command: call.command, Err: err, Output: lastLines(string(out), 8)}
	}
	return out, cpu, nil
}

// passwordFile returns args with conn's password in a private option file
// instead of on the command line (where ps shows it), and the function that
// removes the file.
func passwordFile(args []string, conn bench.Connection) ([]string, func(), error) {
	args = slices.DeleteFunc(slices.Clone(args), func(a string) bool { return strings.HasPrefix(a, "--mysql-password=") })
	if conn.Password == "" {
		return args, func() {}, nil
	}
	f, err := os.CreateTemp("", "perfbisect-sysbench-*.conf")
	if err != nil {
		return nil, nil, err
	}
	remove := func() { os.Remove(f.Name()) }
	_, err = fmt.Fprintf(f, "mysql-password=%s\n", conn.Password)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		remove()
		return nil, nil, err
	}
	return append([]string{args[0], "--config-file=" + f.Name()}, args[1:]...), remove, nil
}

// startSysbench starts sysbench at path with args, its output (stdout and
// stderr) on the returned pipe. sysbench writes through stdio, which holds a
// pipe's output until exit; coreutils' stdbuf makes it line-buffered so
// that the hooks fire on time. Errors wrap ErrNoSysbench.
func startSysbench(ctx context.Context, path string, args []string, call sysbenchCall) (*exec.Cmd, *os.File, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, path, args...)
	if stdbuf, err := exec.LookPath("stdbuf"); err == nil {
		cmd = exec.CommandContext(ctx, stdbuf, append([]string{"-oL", "-eL", path}, args...)...)
	}
	cmd.Dir = call.dir
	if len(call.env) > 0 {
		cmd.Env = append(os.Environ(), call.env...)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, nil, fmt.Errorf("%w: %v", ErrNoSysbench, err)
	}
	pw.Close()
	return cmd, pr, nil
}

// follow reads sysbench's output from pr to its end (then closes it),
// copying it to sb.Output and, for a run, calling sb.Hooks: the window
// starts at "Threads started!" (or the warm-up's checkpoint report) and
// ends at the final "SQL statistics:"; each second's line between is an
// interval. It returns the output and the CPU time process pid (sysbench)
// used between the window's edges, from its /proc stat (0 when unread).
func (sb Binary) follow(pr *os.File, call sysbenchCall, pid int) ([]byte, time.Duration) {
	var cpu0, cpu1 time.Duration
	var cpuErr error
	var out bytes.Buffer
	warm := call.warm
	started, ended := false, false
	var pending []bench.Interval // per-second lines of the report interval under way
	var lastAt time.Duration     // the last second seen (sysbench can print one twice)
	reports := 0                 // "SQL statistics:" lines seen; the checkpoint's comes first
	final := 1
	if warm > 0 {
		final = 2
	}
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line)
		out.WriteByte('\n')
		if sb.Output != nil {
			fmt.Fprintln(sb.Output, line)
		}
		if call.command != "run" {
			continue
		}
		switch {
		case !started && (warm == 0 && strings.HasPrefix(line, "Threads started!") ||
			warm > 0 && strings.HasPrefix(line, fmt.Sprintf("[ %ds ] Checkpoint report:", warm))):
			started = true
			if sb.Hooks.MeasureStart != nil {
				sb.Hooks.MeasureStart()
			}
			cpu0, cpuErr = serverctl.ProcessCPUTime(pid)
		case strings.HasPrefix(line, "SQL statistics:"):
			if reports++; started && !ended && reports == final {
				ended = true
				var err error
				if cpu1, err = serverctl.ProcessCPUTime(pid); cpuErr == nil {
					cpuErr = err
				}
				if sb.Hooks.MeasureEnd != nil {
					sb.Hooks.MeasureEnd()
				}
			}
		case started && sb.Hooks.Interval != nil && call.reportInterval > 0:
			// Every reportInterval, like Run: sysbench reports each second.
			if iv, ok := parseInterval(line, warm); ok && iv.At > lastAt {
				lastAt = iv.At
				if pending = append(pending, iv); iv.At%call.reportInterval == 0 {
					sb.Hooks.Interval(bench.GroupIntervals(pending, call.reportInterval)[0])
					pending = pending[:0]
				}
			}
		}
	}
	if len(pending) > 0 && ended && sb.Hooks.Interval != nil {
		sb.Hooks.Interval(bench.GroupIntervals(pending, call.reportInterval)[0])
	}
	io.Copy(io.Discard, pr)
	pr.Close()
	if cpuErr != nil || !ended {
		return out.Bytes(), 0
	}
	return out.Bytes(), cpu1 - cpu0
}

// lastLines returns the last n non-empty lines of s.
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

var (
	sbInterval = regexp.MustCompile(`^\[ (\d+)s \] thds: \d+ tps: ([\d.]+) qps: ([\d.]+) \(r/w/o: ([\d.]+)/([\d.]+)/([\d.]+)\) lat \(ms,[\d.]+%\): ([\d.]+) err/s: ([\d.]+) reconn/s: ([\d.]+)`)
	sbVersion  = regexp.MustCompile(`(?m)^sysbench ([\d.]+)`)
	sbField    = regexp.MustCompile(`^\s*([a-z][a-z ]*[a-z]|\d+(?:\.\d+)?(?:st|nd|rd|th) percentile):\s+([\d.]+)s?(?:\s+\(([\d.]+) per sec\.\))?`)
)

// parseInterval reads a per-second line ("[ 3s ] thds: 2 tps: ...") of a
// run whose warm-up was warm seconds; ok is false for other lines and for the
// warm-up's.
func parseInterval(line string, warm int) (iv bench.Interval, ok bool) {
	m := sbInterval.FindStringSubmatch(line)
	if m == nil {
		return iv, false
	}
	at, _ := strconv.Atoi(m[1])
	if at <= warm {
		return iv, false
	}
	f := func(i int) float64 { v, _ := strconv.ParseFloat(m[i], 64); return v }
	return bench.Interval{At: time.Duration(at-warm) * time.Second, Length: time.Second,
		TPS: f(2), QPS: f(3), ReadsPS: f(4), WritesPS: f(5), OtherPS: f(6),
		P95: time.Duration(f(7) * float64(time.Millisecond)), IgnoredErrorsPS: f(8), ReconnectsPS: f(9)}, true
}

// ParseReport reads the output of a sysbench 1.0 run made with
// Args(o, ...) into a Result: the last report (after a checkpoint at the
// warm-up's end, it covers only the window) gives the counts, tps, qps, latency
// min/avg/max/sum and the o.Percentile percentile (sysbench prints latencies in
// ms with two decimals, from its own log-scale histogram); the interval lines
// after the warm-up give Intervals. LatencyP95 or LatencyP99 is set when
// o.Percentile is 95 or 99 (sysbench prints one percentile). sysbench does not
// print per-thread counts or ignored errors by code: ThreadEvents, ThreadTime
// and IgnoredByCode stay empty. An output without a final report is an error.
func ParseReport(out []byte, o bench.Options) (*bench.Result, error) {
	var (
		fields  map[string]float64 // the last report's fields
		rates   map[string]float64
		current map[string]float64
		curRate map[string]float64
		ivs     []bench.Interval
	)
	warm := int(o.Warmup / time.Second)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if iv, ok := parseInterval(line, warm); ok {
			// Under load sysbench can print a second twice; keep the first.
			if len(ivs) == 0 || iv.At > ivs[len(ivs)-1].At {
				ivs = append(ivs, iv)
			}
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(line), "SQL statistics:") {
			current, curRate = map[string]float64{}, map[string]float64{}
			continue
		}
		if current == nil {
			continue
		}
		if m := sbField.FindStringSubmatch(line); m != nil {
			key := m[1]
			if strings.HasSuffix(key, "percentile") {
				key = "percentile"
			}
			v, _ := strconv.ParseFloat(m[2], 64)
			if _, dup := current[key]; !dup {
				current[key] = v
			}
			if m[3] != "" {
				curRate[key], _ = strconv.ParseFloat(m[3], 64)
			}
		}
		if strings.HasPrefix(strings.TrimSpace(line), "execution time (avg/stddev)") {
			fields, rates = current, curRate // a report is complete
			current = nil
		}
	}
	if fields == nil {
		return nil, fmt.Errorf("sysbench output has no final report:\n%s", lastLines(string(out), 8))
	}
	for _, k := range []string{"read", "write", "other", "transactions", "queries", "min", "avg", "max", "percentile", "sum"} {
		if _, ok := fields[k]; !ok {
			return nil, fmt.Errorf("sysbench report without %q:\n%s", k, lastLines(string(out), 30))
		}
	}
	msDur := func(k string) time.Duration { return time.Duration(fields[k] * float64(time.Millisecond)) }
	driver := "sysbench"
	if m := sbVersion.FindSubmatch(out); m != nil {
		driver += " " + string(m[1])
	}
	r := &bench.Result{
		Driver: driver,
		Events: int64(fields["transactions"]),
		Reads:  int64(fields["read"]), Writes: int64(fields["write"]), Other: int64(fields["other"]),
		TPS: rates["transactions"], QPS: rates["queries"],
		LatencyMin: msDur("min"), LatencyAvg: msDur("avg"), LatencyMax: msDur("max"),
		LatencyPct: msDur("percentile"), LatencySum: msDur("sum"), Percentile: o.Percentile,
		IgnoredErrors: int64(fields["ignored errors"]), Reconnects: int64(fields["reconnects"]),
		Intervals: ivs,
	}
	if r.TPS > 0 {
		r.Window = time.Duration(float64(r.Events) / r.TPS * float64(time.Second))
	} else {
		r.Window = o.Time
	}
	switch o.Percentile {
	case 95:
		r.LatencyP95 = r.LatencyPct
	case 99:
		r.LatencyP99 = r.LatencyPct
	}
	return r, nil
}

// Version returns "sysbench" and the version of the binary at path
// ("sysbench" from PATH when empty), as Result.Driver names it: "sysbench 1.0.20".
// Errors wrap ErrNoSysbench.
func Version(ctx context.Context, path string) (string, error) {
	if path == "" {
		path = "sysbench"
	}
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s --version: %v; install it (apt-get install sysbench) or name it with --sysbench-path", ErrNoSysbench, path, err)
	}
	m := sbVersion.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%w: %s --version printed %q", ErrNoSysbench, path, bytes.TrimSpace(out))
	}
	return "sysbench " + string(m[1]), nil
}
