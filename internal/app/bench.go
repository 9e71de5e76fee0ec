package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/report"
)

// BenchRequest is `perfbisect bench`: one workload command (prepare, run,
// cleanup) against a server the user names, as sysbench runs it. Options
// are checked (Validate); Sysbench runs real sysbench (at SysbenchPath)
// instead of the built-in workload. Format is text or json, Output a file
// for run's report ("" for Out); Raw, when set, gets sysbench's own output;
// Log the one-line summaries.
type BenchRequest struct {
	Command      string
	Options      bench.Options
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
	o, conn := req.Options, req.Conn
	failed := func(err error) error {
		if ctx.Err() != nil {
			return With(Interrupted, fmt.Errorf("bench %s interrupted", req.Command))
		}
		return With(Failure, fmt.Errorf("bench %s %s (%s): %w", o.Workload, req.Command, conn, err))
	}
	var driver bench.Driver = bench.Builtin{}
	name := bench.DriverBuiltin
	if req.Sysbench {
		if err := bench.SysbenchSupports(o); err != nil {
			return bisect.Usagef("--driver sysbench: %v", err)
		}
		var err error
		if name, err = bench.SysbenchVersion(ctx, req.SysbenchPath); err != nil {
			return bisect.Usagef("--driver sysbench: %v", err)
		}
		driver = bench.Sysbench{Path: req.SysbenchPath, Output: req.Raw}
	}
	if req.Command != "run" {
		began := time.Now()
		var err error
		if req.Command == "prepare" {
			err = driver.Prepare(ctx, conn, o)
		} else {
			err = driver.Cleanup(ctx, conn, o)
		}
		if err != nil {
			return failed(err)
		}
		what := fmt.Sprintf("prepared %d table(s) of %d rows", o.Tables, bench.RowsPerTable(o))
		if req.Command == "cleanup" {
			what = fmt.Sprintf("dropped %d table(s)", o.Tables)
		}
		fmt.Fprintf(req.Log, "perfbisect bench: %s %s for %s in %s (%s)\n", name, what, o.Workload, time.Since(began).Round(time.Millisecond), conn)
		return nil
	}
	fmt.Fprintf(req.Log, "perfbisect bench: %s %s against %s\n", name, o.Workload, conn)
	var live io.Writer
	if req.Format == "text" && req.Output == "" {
		live = req.Out
	}
	hooks := bench.Hooks{}
	if live != nil {
		if err := bench.WriteHeader(live, o, name); err != nil {
			return failed(err)
		}
		hooks.Interval = func(iv bench.Interval) { _ = bench.WriteInterval(live, iv, o) }
	}
	res, err := driver.Run(ctx, conn, o, hooks)
	if err != nil {
		return failed(err)
	}
	var out bytes.Buffer
	switch {
	case req.Format == "json":
		err = writeBenchJSON(&out, o, conn, res)
	case live != nil:
		err = res.WriteSummary(&out, o)
	default:
		err = res.WriteText(&out, o)
	}
	if err != nil {
		return failed(err)
	}
	if req.Output != "" {
		if err := report.WriteFile(req.Output, out.Bytes()); err != nil {
			return failed(errors.New(strings.Replace(err.Error(), "write ", "--output ", 1)))
		}
		return nil
	}
	_, err = req.Out.Write(out.Bytes())
	return err
}

// writeBenchJSON writes bench run's JSON document: the workload, the
// connection (without its password), the options that shape the numbers,
// and the result.
func writeBenchJSON(w io.Writer, o bench.Options, conn bench.Connection, res *bench.Result) error {
	doc := struct {
		Workload   string         `json:"workload"` // Options.Summary
		Connection string         `json:"connection"`
		Options    map[string]any `json:"options"`
		Result     *bench.Result  `json:"result"`
	}{o.Summary(), conn.String(), map[string]any{
		"tables": o.Tables, "table_size": o.TableSize, "threads": o.Threads, "time_s": o.Time.Seconds(),
		"warmup_s": o.Warmup.Seconds(), "rand_type": o.RandType, "rand_seed": o.RandSeed, "range_size": o.RangeSize,
		"skip_trx": o.SkipTrx, "percentile": o.Percentile, "storage_engine": o.StorageEngine,
	}, res}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
