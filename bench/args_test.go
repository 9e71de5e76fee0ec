package bench_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
)

func TestParseArgs(t *testing.T) {
	inv, err := bench.ParseArgs(strings.Fields(
		"/usr/share/sysbench/oltp_write_only.lua --tables=4 --table_size=100000 --threads 8 --time=60 --warmup-time=5 " +
			"--rand-type=uniform --skip-trx --range_selects=off --mysql-ignore-errors=1213,1062 --report-interval=1 run"))
	if err != nil {
		t.Fatal(err)
	}
	o := inv.Options
	if o.Workload != "oltp_write_only" || o.Tables != 4 || o.TableSize != 100000 || o.Threads != 8 ||
		o.Time != time.Minute || o.Warmup != 5*time.Second || o.RandType != "uniform" || !o.SkipTrx ||
		o.RangeSelects || len(o.IgnoreErrors) != 2 || o.IgnoreErrors[1] != 1062 || o.ReportInterval != time.Second ||
		inv.Command != "run" {
		t.Errorf("parsed %+v, command %q", o, inv.Command)
	}
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
}

// TestParseLegacyArgs: a 0.4.12 command line from a bug report becomes the
// equivalent 1.0 workload, with notes.
func TestParseLegacyArgs(t *testing.T) {
	inv, err := bench.ParseArgs(strings.Fields(
		"--test=oltp --oltp-read-only=on --oltp-table-size=1000000 --oltp-dist-type=uniform " +
			"--oltp-range-size=1000 --num-threads=16 --max-time=60 --mysql-socket=/tmp/x.sock run"))
	if err != nil {
		t.Fatal(err)
	}
	o := inv.Options
	if o.Workload != "oltp_read_only" || o.TableSize != 1000000 || o.RandType != "uniform" || o.RangeSize != 1000 ||
		o.Threads != 16 || o.Time != time.Minute {
		t.Errorf("parsed %+v", o)
	}
	notes := strings.Join(inv.Notes, "\n")
	for _, want := range []string{"--oltp-table-size is --table-size", "--num-threads is --threads", "oltp_read_only"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes miss %q:\n%s", want, notes)
		}
	}
	if inv.Conn.Socket != "/tmp/x.sock" || inv.Conn.User != "sbtest" || len(inv.ConnOptions) != 1 {
		t.Errorf("connection %+v from %v, want the socket and sysbench's default user", inv.Conn, inv.ConnOptions)
	}
	inv, _ = bench.ParseArgs([]string{"--test=oltp"})
	if inv.Options.Workload != "oltp_read_write" {
		t.Errorf("--test=oltp: workload %s, want oltp_read_write", inv.Options.Workload)
	}
}

func TestParseArgsErrors(t *testing.T) {
	cases := []struct {
		args string
		is   error
	}{
		{"--thread=4", bench.ErrUnknownOption},
		{"--threads=four", bench.ErrInvalidOption},
		{"--skip-trx=maybe", bench.ErrInvalidOption},
		{"--events=1000", bench.ErrInvalidOption},
		{"--secondary=on", bench.ErrInvalidOption},
		{"--mysql-ignore-errors=all", bench.ErrInvalidOption},
	}
	for _, c := range cases {
		_, err := bench.ParseArgs(strings.Fields(c.args))
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), strings.Fields(c.args)[0]) {
			t.Errorf("%s: got %v, want %v naming the argument", c.args, err, c.is)
		}
	}
	o := bench.DefaultOptions()
	if note, err := o.Set("oltp_table_size", "500"); err != nil || o.TableSize != 500 || note == "" {
		t.Errorf("Set(oltp_table_size): %v, %q, table size %d", err, note, o.TableSize)
	}
}
