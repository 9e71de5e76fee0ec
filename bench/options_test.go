package bench_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
)

// TestDefaultOptions pins sysbench 1.0.20's defaults (sysbench --help and
// oltp_common.lua) and perfbisect's fixed seed.
func TestDefaultOptions(t *testing.T) {
	o := bench.DefaultOptions()
	checks := []struct {
		name      string
		got, want any
	}{
		{"workload", o.Workload, "oltp_read_only"},
		{"tables", o.Tables, 1},
		{"table-size", o.TableSize, 10000},
		{"threads", o.Threads, 1},
		{"time", o.Time, 10 * time.Second},
		{"warmup", o.Warmup, time.Duration(0)},
		{"range-size", o.RangeSize, 100},
		{"point-selects", o.PointSelects, 10},
		{"simple-ranges", o.SimpleRanges, 1},
		{"sum-ranges", o.SumRanges, 1},
		{"order-ranges", o.OrderRanges, 1},
		{"distinct-ranges", o.DistinctRanges, 1},
		{"index-updates", o.IndexUpdates, 1},
		{"non-index-updates", o.NonIndexUpdates, 1},
		{"delete-inserts", o.DeleteInserts, 1},
		{"range-selects", o.RangeSelects, true},
		{"skip-trx", o.SkipTrx, false},
		{"auto-inc", o.AutoInc, true},
		{"rand-type", o.RandType, "special"},
		{"rand-seed", o.RandSeed, bench.DefaultRandSeed},
		{"rand-spec-iter", o.RandSpecIter, 12},
		{"rand-spec-pct", o.RandSpecPct, 1},
		{"rand-spec-res", o.RandSpecRes, 75},
		{"rand-pareto-h", o.RandParetoH, 0.2},
		{"rand-zipfian-exp", o.RandZipfianExp, 0.8},
		{"percentile", o.Percentile, 95.0},
		{"mysql-storage-engine", o.StorageEngine, "innodb"},
		{"report-interval", o.ReportInterval, time.Duration(0)},
		// sysbench 0.4.12's, for oltp_legacy (sb_oltp.c's oltp_args).
		{"oltp-test-mode", o.OLTPTestMode, "complex"},
		{"oltp-read-only", o.OLTPReadOnly, false},
		{"oltp-table-name", o.OLTPTableName, "sbtest"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("--%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if !slices.Equal(o.IgnoreErrors, []uint16{1213, 1020, 1205}) {
		t.Errorf("--mysql-ignore-errors: got %v, want [1213 1020 1205]", o.IgnoreErrors)
	}
	if o.RandSeed == 0 {
		t.Error("default seed is 0 (clock): rows would differ between revisions")
	}
	if err := o.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	for _, w := range bench.Workloads() {
		o.Workload = w
		if err := o.Validate(); err != nil {
			t.Errorf("workload %s: %v", w, err)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		change func(o *bench.Options)
		is     error
		says   []string
	}{
		{"unknown workload lists the known ones", func(o *bench.Options) { o.Workload = "oltp_read_onyl" },
			bench.ErrUnknownWorkload, []string{`"oltp_read_onyl"`, "oltp_read_only", "oltp_delete", "oltp_insert"}},
		{"lua suffix is not a workload name", func(o *bench.Options) { o.Workload = "oltp_read_only.lua" },
			bench.ErrUnknownWorkload, []string{"oltp_read_only.lua"}},
		{"unknown distribution", func(o *bench.Options) { o.RandType = "gauss" },
			bench.ErrUnknownRandType, []string{"--rand-type", "gauss", "uniform", "zipfian"}},
		{"no tables", func(o *bench.Options) { o.Tables = 0 }, bench.ErrInvalidOption, []string{"--tables=0"}},
		{"empty table", func(o *bench.Options) { o.TableSize = 0 }, bench.ErrInvalidOption, []string{"--table-size=0"}},
		{"no threads", func(o *bench.Options) { o.Threads = 0 }, bench.ErrInvalidOption, []string{"--threads=0"}},
		{"no time", func(o *bench.Options) { o.Time = 0 }, bench.ErrInvalidOption, []string{"--time"}},
		{"negative warm-up", func(o *bench.Options) { o.Warmup = -time.Second }, bench.ErrInvalidOption, []string{"--warmup-time"}},
		{"range size", func(o *bench.Options) { o.RangeSize = 0 }, bench.ErrInvalidOption, []string{"--range-size=0"}},
		{"negative count", func(o *bench.Options) { o.PointSelects = -1 }, bench.ErrInvalidOption, []string{"--point-selects=-1"}},
		{"spec res 100", func(o *bench.Options) { o.RandSpecRes = 100 }, bench.ErrInvalidOption, []string{"--rand-spec-res=100"}},
		{"pareto h", func(o *bench.Options) { o.RandParetoH = 1 }, bench.ErrInvalidOption, []string{"--rand-pareto-h=1"}},
		{"zipf exp", func(o *bench.Options) { o.RandZipfianExp = -1 }, bench.ErrInvalidOption, []string{"--rand-zipfian-exp"}},
		{"percentile", func(o *bench.Options) { o.Percentile = 0 }, bench.ErrInvalidOption, []string{"--percentile=0"}},
		{"engine injection", func(o *bench.Options) { o.StorageEngine = "innodb; DROP" }, bench.ErrInvalidOption, []string{"--mysql-storage-engine"}},
		{"fractional report interval", func(o *bench.Options) { o.ReportInterval = 1500 * time.Millisecond }, bench.ErrInvalidOption, []string{"--report-interval"}},
		{"legacy mode", func(o *bench.Options) { o.Workload = "oltp_legacy"; o.OLTPTestMode = "nontrx" },
			bench.ErrInvalidOption, []string{"--oltp-test-mode", "nontrx", "complex or simple"}},
		{"legacy table name", func(o *bench.Options) { o.Workload = "oltp_legacy"; o.OLTPTableName = "sbtest; DROP" },
			bench.ErrInvalidOption, []string{"--oltp-table-name", "sbtest; DROP"}},
		{"legacy has one table", func(o *bench.Options) { o.Workload = "oltp_legacy"; o.Tables = 4 },
			bench.ErrInvalidOption, []string{"--tables=4", "one table"}},
		{"legacy distributions", func(o *bench.Options) { o.Workload = "oltp_legacy"; o.RandType = "pareto" },
			bench.ErrUnknownRandType, []string{"--oltp-dist-type", "pareto", "uniform, gaussian, special"}},
		{"read-only is legacy only", func(o *bench.Options) { o.OLTPReadOnly = true },
			bench.ErrInvalidOption, []string{"--oltp-read-only", "oltp_legacy", "oltp_read_only"}},
		{"simple mode is legacy only", func(o *bench.Options) { o.Workload = "oltp_read_write"; o.OLTPTestMode = "simple" },
			bench.ErrInvalidOption, []string{"--oltp-test-mode=simple", "oltp_legacy"}},
		{"table name is legacy only", func(o *bench.Options) { o.OLTPTableName = "t1" },
			bench.ErrInvalidOption, []string{"--oltp-table-name=t1", "sbtest1..N"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := bench.DefaultOptions()
			c.change(&o)
			err := o.Validate()
			if !errors.Is(err, c.is) {
				t.Fatalf("got %v, want an error wrapping %v", err, c.is)
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

// TestStatementsPerEvent pins the statement mix of every workload with sysbench's
// defaults (WORKLOAD.md's table), and how options change it.
func TestStatementsPerEvent(t *testing.T) {
	cases := []struct {
		workload            string
		change              func(o *bench.Options)
		reads, writes, othr int
		kinds               []string
	}{
		{"oltp_read_only", nil, 14, 0, 2, []string{"point_selects", "simple_ranges", "sum_ranges", "order_ranges", "distinct_ranges"}},
		{"oltp_read_only", func(o *bench.Options) { o.RangeSelects = false }, 10, 0, 2, []string{"point_selects"}},
		{"oltp_read_only", func(o *bench.Options) { o.SkipTrx = true; o.PointSelects = 3 }, 7, 0, 0, nil},
		{"oltp_read_write", nil, 14, 4, 2, []string{"point_selects", "simple_ranges", "sum_ranges", "order_ranges", "distinct_ranges", "index_updates", "non_index_updates", "deletes", "inserts"}},
		{"oltp_write_only", nil, 0, 4, 2, []string{"index_updates", "non_index_updates", "deletes", "inserts"}},
		{"oltp_write_only", func(o *bench.Options) { o.DeleteInserts = 3 }, 0, 8, 2, nil},
		{"oltp_point_select", nil, 1, 0, 0, []string{"point_selects"}},
		{"oltp_point_select", func(o *bench.Options) { o.PointSelects = 7 }, 1, 0, 0, nil},
		{"oltp_update_index", nil, 0, 1, 0, []string{"index_updates"}},
		{"oltp_update_non_index", nil, 0, 1, 0, []string{"non_index_updates"}},
		{"oltp_insert", nil, 0, 1, 0, []string{"inserts"}},
		{"oltp_delete", nil, 0, 1, 0, []string{"deletes"}},
		// get_request_complex: 10 points, 4 ranges, index and non-index update,
		// one more index update, DELETE, INSERT; BEGIN, COMMIT. All nine
		// statements are prepared in every mode (prepare_stmt_set_trx).
		{"oltp_legacy", nil, 14, 5, 2, []string{"point", "range", "range_sum", "range_order", "range_distinct",
			"update_index", "update_non_index", "delete", "insert"}},
		{"oltp_legacy", func(o *bench.Options) { o.OLTPReadOnly = true }, 14, 0, 2, nil},
		{"oltp_legacy", func(o *bench.Options) { o.IndexUpdates, o.NonIndexUpdates, o.DeleteInserts = 2, 3, 7 }, 14, 8, 2, nil},
		{"oltp_legacy", func(o *bench.Options) { o.SkipTrx = true; o.SumRanges = 0 }, 13, 5, 0, nil},
		{"oltp_legacy", func(o *bench.Options) { o.OLTPTestMode = "simple" }, 1, 0, 0, []string{"point", "range", "range_sum",
			"range_order", "range_distinct", "update_index", "update_non_index", "delete", "insert"}},
	}
	for _, c := range cases {
		o := bench.DefaultOptions()
		o.Workload = c.workload
		if c.change != nil {
			c.change(&o)
		}
		r, w, x := bench.StatementsPerEvent(o)
		if r != c.reads || w != c.writes || x != c.othr {
			t.Errorf("%s: got r/w/o %d/%d/%d, want %d/%d/%d", c.workload, r, w, x, c.reads, c.writes, c.othr)
		}
		if c.kinds != nil && !slices.Equal(bench.StatementKinds(o), c.kinds) {
			t.Errorf("%s: prepares %v, want %v", c.workload, bench.StatementKinds(o), c.kinds)
		}
	}
}

// TestDataKey: every option that changes the prepared rows changes the key;
// one that only changes the run does not.
func TestDataKey(t *testing.T) {
	base := bench.DefaultOptions()
	for name, change := range map[string]func(o *bench.Options){
		"rand-type":       func(o *bench.Options) { o.RandType = "uniform" },
		"rand-spec-pct":   func(o *bench.Options) { o.RandSpecPct = 5 },
		"rand-pareto-h":   func(o *bench.Options) { o.RandParetoH = 0.3 },
		"rand-seed":       func(o *bench.Options) { o.RandSeed = 2 },
		"table-size":      func(o *bench.Options) { o.TableSize++ },
		"tables":          func(o *bench.Options) { o.Tables++ },
		"engine":          func(o *bench.Options) { o.StorageEngine = "myisam" },
		"table options":   func(o *bench.Options) { o.CreateTableOptions = "ROW_FORMAT=COMPACT" },
		"auto-inc":        func(o *bench.Options) { o.AutoInc = false },
		"oltp-table-name": func(o *bench.Options) { o.OLTPTableName = "t2" },
	} {
		o := base
		change(&o)
		if o.DataKey() == base.DataKey() {
			t.Errorf("%s: same DataKey %s", name, o.DataKey())
		}
	}
	o := base
	o.Threads, o.Time, o.PointSelects = 8, time.Minute, 1
	if o.DataKey() != base.DataKey() {
		t.Errorf("threads, time and point selects changed the DataKey")
	}
}

func TestSummary(t *testing.T) {
	o := bench.DefaultOptions()
	o.Threads, o.RandType, o.PointSelects, o.SkipTrx = 2, "uniform", 1, true
	got := o.Summary()
	want := "oltp_read_only, 2 thread(s), 1 table(s) x 10000 rows, uniform ids, 10s window after 0s warm-up, point-selects=1, skip-trx=on"
	if got != want {
		t.Errorf("Summary:\n got %s\nwant %s", got, want)
	}
}
