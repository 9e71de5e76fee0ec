package sysbench_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bench/sysbench"
)

func TestParseArgs(t *testing.T) {
	inv, err := sysbench.ParseArgs(strings.Fields(
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

// TestParseLegacyArgs: a 0.4.12 command line from a bug report runs oltp_legacy,
// 0.4.12's own workload, with notes saying what the options became.
func TestParseLegacyArgs(t *testing.T) {
	inv, err := sysbench.ParseArgs(strings.Fields(
		"--test=oltp --oltp-read-only=on --oltp-table-size=1000000 --oltp-dist-type=uniform " +
			"--oltp-range-size=1000 --num-threads=16 --max-time=60 --max-requests=0 --init-rng=on --mysql-socket=/tmp/x.sock run"))
	if err != nil {
		t.Fatal(err)
	}
	o := inv.Options
	if o.Workload != "oltp_legacy" || !o.OLTPReadOnly || o.OLTPTestMode != "complex" || o.OLTPTableName != "sbtest" ||
		o.TableSize != 1000000 || o.RandType != "uniform" || o.RangeSize != 1000 || o.Threads != 16 || o.Time != time.Minute {
		t.Errorf("parsed %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
	notes := strings.Join(inv.Notes, "\n")
	for _, want := range []string{"--oltp-table-size is --table-size", "--num-threads is --threads", "--init-rng=on ignored",
		"runs as oltp_legacy", "table sbtest", "sb_oltp.c's uniform distribution", "--oltp-read-only=on"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes miss %q:\n%s", want, notes)
		}
	}
	if inv.Conn.Socket != "/tmp/x.sock" || inv.Conn.User != "sbtest" || len(inv.ConnOptions) != 1 {
		t.Errorf("connection %+v from %v, want the socket and sysbench's default user", inv.Conn, inv.ConnOptions)
	}

	cases := []struct {
		args                 string
		mode, table, dist    string
		readOnly, skipTrx    bool
		iter, pct, res, seed int64
		note                 string
	}{
		{"--test=oltp", "complex", "sbtest", "special", false, false, 12, 1, 75, bench.DefaultRandSeed,
			"sb_oltp.c's special distribution with --oltp-dist-iter=12 --oltp-dist-pct=1 --oltp-dist-res=75); complex mode"},
		{"--test=oltp --oltp-test-mode=simple --oltp-table-name=t1 --oltp-skip-trx --seed-rng=7", "simple", "t1", "special", false, true, 12, 1, 75, 7,
			"table t1 with its index k created before the load"},
		{"--oltp-dist-type=special --oltp-dist-iter=6 --oltp-dist-pct=5 --oltp-dist-res=80 --test=oltp", "complex", "sbtest", "special", false, false, 6, 5, 80, bench.DefaultRandSeed,
			"--oltp-dist-iter=6 --oltp-dist-pct=5 --oltp-dist-res=80"},
		{"--test oltp --oltp-dist-type=gauss", "complex", "sbtest", "gaussian", false, false, 12, 1, 75, bench.DefaultRandSeed,
			"sb_oltp.c's gaussian distribution"},
	}
	for _, c := range cases {
		inv, err := sysbench.ParseArgs(strings.Fields(c.args))
		if err != nil {
			t.Errorf("%s: %v", c.args, err)
			continue
		}
		o := inv.Options
		if o.Workload != "oltp_legacy" || o.OLTPTestMode != c.mode || o.OLTPTableName != c.table || o.RandType != c.dist ||
			o.OLTPReadOnly != c.readOnly || o.SkipTrx != c.skipTrx || int64(o.RandSpecIter) != c.iter ||
			int64(o.RandSpecPct) != c.pct || int64(o.RandSpecRes) != c.res || o.RandSeed != c.seed {
			t.Errorf("%s: parsed %+v", c.args, o)
		}
		if err := o.Validate(); err != nil {
			t.Errorf("%s: %v", c.args, err)
		}
		if notes := strings.Join(inv.Notes, "\n"); !strings.Contains(notes, c.note) {
			t.Errorf("%s: notes miss %q:\n%s", c.args, c.note, notes)
		}
	}

	// The 1.0 names still select the 1.0 workloads, with no legacy note.
	inv, err = sysbench.ParseArgs(strings.Fields("oltp_read_write --oltp-table-size=500 run"))
	if err != nil || inv.Options.Workload != "oltp_read_write" || inv.Options.TableSize != 500 ||
		strings.Contains(strings.Join(inv.Notes, " "), "oltp_legacy") {
		t.Errorf("oltp_read_write: %v, %+v, notes %q", err, inv.Options, inv.Notes)
	}
	inv, err = sysbench.ParseArgs([]string{"--test=/usr/share/sysbench/oltp_point_select.lua"})
	if err != nil || inv.Options.Workload != "oltp_point_select" {
		t.Errorf("--test=oltp_point_select.lua: %v, %+v", err, inv.Options)
	}
	// A legacy-only option on a 1.0 workload is an error, not silently ignored.
	inv, err = sysbench.ParseArgs(strings.Fields("oltp_read_only --oltp-read-only=on"))
	if err != nil {
		t.Fatal(err)
	}
	if err := inv.Options.Validate(); !errors.Is(err, bench.ErrInvalidOption) || !strings.Contains(err.Error(), "--oltp-read-only") {
		t.Errorf("--oltp-read-only with oltp_read_only: Validate says %v, want an error naming --oltp-read-only", err)
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
		{"--oltp-test-mode=nontrx", bench.ErrInvalidOption},
		{"--oltp-read-only=maybe", bench.ErrInvalidOption},
	}
	for _, c := range cases {
		_, err := sysbench.ParseArgs(strings.Fields(c.args))
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), strings.Fields(c.args)[0]) {
			t.Errorf("%s: got %v, want %v naming the argument", c.args, err, c.is)
		}
	}
	o := bench.DefaultOptions()
	if note, err := o.Set("oltp_table_size", "500"); err != nil || o.TableSize != 500 || note == "" {
		t.Errorf("Set(oltp_table_size): %v, %q, table size %d", err, note, o.TableSize)
	}
	if note, err := o.Set("test", "oltp"); err != nil || o.Workload != "oltp_legacy" || !strings.Contains(note, "oltp_legacy") {
		t.Errorf("Set(test, oltp): %v, %q, workload %s", err, note, o.Workload)
	}
}

// TestParseArgsBooleanValues: "--skip-trx off" takes "off" as the value (it used
// to become "on" with "off" read as the workload), and extra words are errors,
// not silently the last one wins.
func TestParseArgsBooleanValues(t *testing.T) {
	inv, err := sysbench.ParseArgs(strings.Fields("--skip-trx off --range-selects no oltp_read_write --auto-inc false run"))
	if err != nil {
		t.Fatal(err)
	}
	if o := inv.Options; o.SkipTrx || o.RangeSelects || o.AutoInc || o.Workload != "oltp_read_write" || inv.Command != "run" {
		t.Errorf("parsed %+v, command %q", o, inv.Command)
	}
	inv, err = sysbench.ParseArgs(strings.Fields("oltp_read_only --skip-trx run"))
	if err != nil || !inv.Options.SkipTrx || inv.Command != "run" {
		t.Errorf("bare --skip-trx before the command: %v %+v", err, inv)
	}
	for _, bad := range []string{"oltp_read_only oltp_point_select run", "oltp_read_only prepare run", "-t 2 oltp_read_only run", "--time=99999999999 run", "--time=-3 run"} {
		if _, err := sysbench.ParseArgs(strings.Fields(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
