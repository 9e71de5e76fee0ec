package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bench/sysbench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/internal/cliflag"
	"github.com/perfbisect/perfbisect/internal/usage"
)

// BenchRequest is `perfbisect bench`: one workload command (prepare, run,
// cleanup) against a server the user names, as sysbench runs it. Options
// are checked (Validate); Sysbench runs real sysbench (at SysbenchPath)
// instead of the built-in workload. Format is text or json, Output a file
// for run's report ("" for Out); Raw, when set, gets sysbench's own output;
// Log the one-line summaries.
type BenchRequest struct {
	Command string
	// Options are the OLTP workload's, or, with Custom, sysbench's general
	// settings (threads, time, warm-up, seed, percentile, report interval).
	Options bench.Options
	// Custom, when set, is the workload to run instead: a sysbench script
	// (its path or a name sysbench finds; real sysbench runs it whatever
	// Sysbench says) or a SQL workload file (newCustom), with its own
	// options CustomArgs.
	Custom       string
	CustomArgs   []string
	Conn         bench.Connection
	Sysbench     bool
	SysbenchPath string
	Format       string
	Output       string
	Out, Log     io.Writer
	Raw          io.Writer
}

// Bench runs the request's command. A text report to Out is printed as the
// run goes, like sysbench's; JSON and Output get the whole report at the
// end. Errors: usage when sysbench cannot run these options or is missing;
// Interrupted; a failure naming the workload, the command and the server.
func Bench(ctx context.Context, req BenchRequest) error {
	failed := func(o bench.Options, err error) error {
		if ctx.Err() != nil {
			return With(Interrupted, fmt.Errorf("bench %s interrupted", req.Command))
		}
		name := o.Workload
		if req.Custom != "" {
			name = req.Custom
		}
		return With(Failure, fmt.Errorf("bench %s %s (%s): %w", name, req.Command, req.Conn, err))
	}
	w, o, driver, err := benchWorkload(ctx, req)
	if err != nil {
		return err
	}
	if req.Command != "run" {
		if err := benchPrepareOrCleanup(ctx, req, w, o, driver); err != nil {
			return failed(o, err)
		}
		return nil
	}
	out, err := benchRun(ctx, req, w, o, driver)
	if err != nil {
		return failed(o, err)
	}
	if req.Output != "" {
		if err := report.WriteFile(req.Output, out); err != nil {
			return failed(o, errors.New(strings.Replace(err.Error(), "write ", "--output ", 1)))
		}
		return nil
	}
	if _, err := req.Out.Write(out); err != nil {
		return With(Failure, err)
	}
	return nil
}

// benchWorkload is the request's workload, the options it runs with and
// the driver that runs it (bench.DriverBuiltin or sysbench's version).
// Errors: usage, naming the setting.
func benchWorkload(ctx context.Context, req BenchRequest) (bench.Workload, bench.Options, string, error) {
	o := req.Options
	driver := bench.DriverBuiltin
	if req.Sysbench || req.Custom != "" && bench.WorkloadKind(req.Custom) == bench.KindScript {
		var err error
		if driver, err = sysbench.Version(ctx, req.SysbenchPath); err != nil {
			return nil, o, "", bisect.Usagef("{driver} sysbench: %v", err)
		}
	}
	switch sb := (sysbench.Binary{Path: req.SysbenchPath, Output: req.Raw}); {
	case req.Custom != "":
		cw, err := newCustom(ctx, req.Custom, req.CustomArgs, o, sb)
		if err != nil {
			return nil, o, "", bisect.Usagef("%v", err)
		}
		switch cw := cw.(type) {
		case *sysbench.Script:
			o = cw.Options
		case *bench.SQLWorkload:
			o, driver = cw.Options, bench.DriverBuiltin
		case *bench.TPCC:
			o, driver = cw.Options, bench.DriverBuiltin
		}
		return cw, o, driver, nil
	case req.Sysbench:
		if err := sysbench.Supports(o); err != nil {
			return nil, o, "", bisect.Usagef("{driver} sysbench: %v", err)
		}
		return sysbench.OLTP{Options: o, Sysbench: sb, OwnPrepare: true}, o, driver, nil
	}
	return bench.OLTP{Options: o}, o, driver, nil
}

// benchPrepareOrCleanup is bench prepare and bench cleanup: w's, said on
// the log with the time they took.
func benchPrepareOrCleanup(ctx context.Context, req BenchRequest, w bench.Workload, o bench.Options, driver string) error {
	began := time.Now()
	var err error
	if req.Command == "prepare" {
		err = w.Prepare(ctx, req.Conn)
	} else {
		err = w.Cleanup(ctx, req.Conn)
	}
	if err != nil {
		return err
	}
	what := fmt.Sprintf("prepared %d table(s) of %d rows", o.Tables, bench.RowsPerTable(o))
	if req.Command == "cleanup" {
		what = fmt.Sprintf("dropped %d table(s)", o.Tables)
	}
	if req.Custom != "" {
		what = req.Command + " done"
	}
	fmt.Fprintf(req.Log, "perfbisect bench: %s %s for %s in %s (%s)\n", driver, what, w.Name(), time.Since(began).Round(time.Millisecond), req.Conn)
	return nil
}

// benchRun is bench run: w's run, each second's line as it comes in text on
// the terminal; it returns the summary (or the text or JSON report).
func benchRun(ctx context.Context, req BenchRequest, w bench.Workload, o bench.Options, driver string) ([]byte, error) {
	fmt.Fprintf(req.Log, "perfbisect bench: %s %s against %s\n", driver, w.Name(), req.Conn)
	var live io.Writer
	if req.Format == "text" && req.Output == "" {
		live = req.Out
	}
	hooks := bench.Hooks{}
	if live != nil {
		if err := bench.WriteHeader(live, o, driver); err != nil {
			return nil, err
		}
		hooks.Interval = func(iv bench.Interval) { _ = bench.WriteInterval(live, iv, o) }
	}
	res, err := w.Run(ctx, req.Conn, hooks)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	switch {
	case req.Format == "json":
		err = writeBenchJSON(&out, w, o, req.Conn, res)
	case live != nil:
		err = res.WriteSummary(&out, o)
	default:
		err = res.WriteText(&out, o)
	}
	return out.Bytes(), err
}

// writeBenchJSON writes bench run's JSON document: the workload, the
// connection (without its password), the options that shape the numbers,
// and the result.
func writeBenchJSON(out io.Writer, w bench.Workload, o bench.Options, conn bench.Connection, res *bench.Result) error {
	doc := struct {
		Workload   string         `json:"workload"` // Workload.Summary
		Connection string         `json:"connection"`
		Options    map[string]any `json:"options"`
		Result     *bench.Result  `json:"result"`
	}{w.Summary(), conn.String(), map[string]any{
		"tables": o.Tables, "table_size": o.TableSize, "threads": o.Threads, "time_s": o.Time.Seconds(),
		"warmup_s": o.Warmup.Seconds(), "rand_type": o.RandType, "rand_seed": o.RandSeed, "range_size": o.RangeSize,
		"skip_trx": o.SkipTrx, "percentile": o.Percentile, "storage_engine": o.StorageEngine,
	}, res}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	_, err = out.Write(append(b, '\n'))
	return err
}

// ParseBenchArgs reads perfbisect bench's command line: perfbisect's own
// options (--driver, --sysbench-path, --format, --output, -v/--verbose,
// -h/--help) anywhere in args, and sysbench's command line (1.0's, or 0.4's
// translated) in the rest. It returns the request (without its writers:
// Raw is to be set when verbose), the notes to show (translations, a seed
// from the clock), whether help was asked for, and a usage error naming the
// option at fault.
func ParseBenchArgs(args []string) (req BenchRequest, verbose bool, notes []string, help bool, err error) {
	f, rest, help, err := splitBenchArgs(args)
	if err != nil || help {
		return req, false, nil, help, err
	}
	for _, a := range rest {
		if strings.HasPrefix(a, "--workload-options") || strings.HasPrefix(a, "--workload=") || a == "--workload" {
			return req, false, nil, false, usageError("%s: perfbisect bench takes the workload first and its options as they are (perfbisect bench tpcc.lua --scale=1 ... run)", strings.SplitN(a, "=", 2)[0])
		}
	}
	inv, isCustom, err := sysbench.ParseCustomArgs(rest)
	if !isCustom && err == nil {
		inv, err = sysbench.ParseArgs(rest)
	}
	if err != nil {
		return req, false, nil, false, With(Usage, errors.New(cliflag.Error("bench", nil, err)))
	}
	o := inv.Options
	if err := o.Validate(); err != nil {
		return req, false, nil, false, With(Usage, err)
	}
	switch inv.Command {
	case "prepare", "run", "cleanup":
	case "":
		return req, false, nil, false, usageError("say what to do: prepare, run or cleanup (see perfbisect bench --help)")
	default:
		return req, false, nil, false, usageError("%s: not supported; prepare, run and cleanup are", inv.Command)
	}
	switch {
	case (f.outputSet || f.formatSet) && inv.Command != "run":
		return req, false, nil, false, usageError("{output} and {format} are for run; %s prints one line", inv.Command)
	case f.outputSet && f.output == "":
		return req, false, nil, false, usageError("{output}: name a file")
	case f.output != "":
		if err := report.CheckWritable("output", f.output); err != nil {
			return req, false, nil, false, With(Usage, err)
		}
	}
	if o.Workload == "oltp_insert" && !o.AutoInc && !slices.ContainsFunc(rest, func(a string) bool { return strings.HasPrefix(a, "--rand-seed") }) {
		// Its ids come from the unique sequence of the seed: a fixed seed would
		// insert the ids of the last run again (duplicate keys).
		o.RandSeed = 0
		inv.Notes = append(inv.Notes, "oltp_insert --auto-inc=off: --rand-seed from the clock (a fixed seed repeats the last run's ids); give --rand-seed to fix it")
	}
	if inv.Custom != "" && f.driverSet && (bench.WorkloadKind(inv.Custom) == bench.KindScript) != (f.driver == "sysbench") {
		return req, false, nil, false, usageError("{driver} %s: %s is %s", f.driver, inv.Custom,
			map[bool]string{true: "a sysbench script, which sysbench runs", false: "run by the built-in engine"}[bench.WorkloadKind(inv.Custom) == bench.KindScript])
	}
	return BenchRequest{Command: inv.Command, Options: o, Conn: inv.Conn, Custom: inv.Custom, CustomArgs: inv.CustomArgs,
		Sysbench: f.driver == "sysbench", SysbenchPath: f.sysbenchPath, Format: f.format, Output: f.output}, f.verbose, inv.Notes, false, nil
}

// benchFlags are perfbisect's own options of the bench command.
type benchFlags struct {
	driver, sysbenchPath, format, output string
	verbose                              bool
	formatSet, outputSet, driverSet      bool // --format, --output, --driver given
}

// splitBenchArgs takes perfbisect's own options out of args and leaves
// sysbench's command line. help is true for -h/--help.
func splitBenchArgs(args []string) (f benchFlags, rest []string, help bool, err error) {
	f.driver, f.format = "builtin", "text"
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			rest = append(rest, a)
			continue
		}
		var dst *string
		switch name {
		case "h", "help":
			return f, nil, true, nil
		case "v", "verbose":
			f.verbose = true
			continue
		case "driver":
			dst, f.driverSet = &f.driver, true
		case "sysbench-path":
			dst = &f.sysbenchPath
		case "format":
			dst, f.formatSet = &f.format, true
		case "output":
			dst, f.outputSet = &f.output, true
		default:
			rest = append(rest, a)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") {
				return f, nil, false, usageError("%s needs a value", usage.Setting(name))
			}
			i++
			value = args[i]
		}
		*dst = value
	}
	switch f.driver {
	case "builtin", "built-in", "sysbench":
	default:
		return f, nil, false, usageError("{driver} %q: want builtin or sysbench", f.driver)
	}
	if f.format != "text" && f.format != "json" {
		return f, nil, false, usageError("{format} %q: want text or json", f.format)
	}
	return f, rest, false, nil
}
