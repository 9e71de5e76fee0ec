package bench

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/perfbisect/perfbisect/internal/spell"
)

// Options are the sysbench options the built-in workload honours. Names follow
// sysbench 1.0 (--table-size is TableSize, --rand-spec-pct is RandSpecPct ...);
// DefaultOptions gives sysbench 1.0.20's defaults, except RandSeed (fixed here, time
// in sysbench) and the options sysbench 1.0 does not have (Warmup, zipfian,
// CreateTableOptions), which come from sysbench 1.1.
type Options struct {
	// Workload is the sysbench script name without ".lua", one of Workloads():
	// oltp_read_only, oltp_read_write, oltp_write_only, oltp_point_select,
	// oltp_update_index, oltp_update_non_index, oltp_insert, oltp_delete; or
	// oltp_legacy, sysbench 0.4.12's --test=oltp (see OLTPTestMode).
	Workload string

	// OLTPTestMode is 0.4.12's --oltp-test-mode for oltp_legacy: "complex" (the
	// default: BEGIN, point selects, ranges, and unless OLTPReadOnly the updates
	// and a DELETE + INSERT, COMMIT) or "simple" (one point select per event).
	// sb_oltp.c's nontrx and sp modes are not supported.
	OLTPTestMode string
	// OLTPReadOnly is 0.4.12's --oltp-read-only for oltp_legacy: complex mode
	// without the writes. Default false.
	OLTPReadOnly bool
	// OLTPTableName is 0.4.12's --oltp-table-name: the one table of oltp_legacy.
	// Default sbtest.
	OLTPTableName string

	// Tables is --tables: the number of tables, named sbtest1 ... sbtestN. Default 1.
	// oltp_legacy has one table, OLTPTableName.
	Tables int
	// TableSize is --table-size: rows per table. Ids run from 1 to TableSize.
	// Default 10000.
	TableSize int
	// Threads is --threads: concurrent client connections, each running events
	// back to back. Prepare also loads up to Threads tables at once. Default 1.
	Threads int

	// Time is --time: the length of the measured window. Default 10s.
	Time time.Duration
	// Warmup is sysbench 1.1's --warmup-time: how long the workload runs before
	// the measured window starts. Nothing that happens during the warm-up is in any
	// number of Result. Default 0.
	Warmup time.Duration

	// RangeSize is --range-size: rows per range SELECT (id BETWEEN x AND
	// x+RangeSize-1). Default 100. 0.4.12's --oltp-range-size (oltp_legacy's
	// DISTINCT range spans one row more, as in sb_oltp.c).
	RangeSize int
	// PointSelects is --point-selects: point SELECTs per event. Default 10
	// (oltp_point_select always does 1).
	PointSelects int
	// SimpleRanges is --simple-ranges: plain range SELECTs per event. Default 1.
	SimpleRanges int
	// SumRanges is --sum-ranges: SELECT SUM(k) ranges per event. Default 1.
	SumRanges int
	// OrderRanges is --order-ranges: range SELECTs with ORDER BY c per event.
	// Default 1.
	OrderRanges int
	// DistinctRanges is --distinct-ranges: SELECT DISTINCT c ranges per event.
	// Default 1.
	DistinctRanges int
	// IndexUpdates is --index-updates: UPDATE ... SET k=k+1 per event. Default 1.
	IndexUpdates int
	// NonIndexUpdates is --non-index-updates: UPDATE ... SET c=? per event. Default 1.
	NonIndexUpdates int
	// DeleteInserts is --delete-inserts: DELETE + INSERT pairs of the same id per
	// event. Default 1. oltp_legacy ignores it: 0.4.12 always runs one index
	// update, DELETE and INSERT of one id.
	DeleteInserts int

	// RangeSelects is --range-selects: when false, no range SELECT is prepared or
	// run. Default true. (oltp_legacy prepares them anyway, as 0.4.12 does, and
	// does not run them.)
	RangeSelects bool
	// SkipTrx is --skip-trx: run the statements in autocommit mode, without BEGIN
	// and COMMIT. Default false.
	SkipTrx bool
	// AutoInc is --auto-inc: id is AUTO_INCREMENT and oltp_insert lets the server
	// pick ids; when false, oltp_insert starts from empty tables and draws ids from
	// sysbench's unique sequence. Default true.
	AutoInc bool

	// RandType is --rand-type: the distribution of ids and k values, one of
	// uniform, gaussian, special, pareto, zipfian. Default special (sysbench 1.0;
	// 1.1 changed it to uniform). For oltp_legacy it is 0.4.12's --oltp-dist-type,
	// one of uniform, gaussian, special, drawn with sb_oltp.c's own functions
	// (rnd_func_uniform, rnd_func_gaussian, rnd_func_special), not sysbench 1.0's.
	RandType string
	// RandSeed is --rand-seed: the seed every generator derives from (table rows,
	// each thread's statements, the unique id sequence). perfbisect's default is a
	// fixed seed (DefaultRandSeed) so every revision gets the same rows and values;
	// 0 means "seed from the clock", as in sysbench.
	RandSeed int64
	// RandSpecIter is --rand-spec-iter: uniform draws summed per gaussian value
	// (gaussian and special). Default 12. 0.4.12's --oltp-dist-iter.
	RandSpecIter int
	// RandSpecPct is --rand-spec-pct: the percentage of the range, around its
	// middle, that gets the 'special' values. Default 1. 0.4.12's --oltp-dist-pct.
	RandSpecPct int
	// RandSpecRes is --rand-spec-res: the percentage of draws that are 'special'.
	// Default 75. 0.4.12's --oltp-dist-res (where 100/(100-res) is rounded down:
	// see oltp_legacy in legacy.go).
	RandSpecRes int
	// RandParetoH is --rand-pareto-h: the Pareto shape h (h=0.2 sends 80% of draws
	// to the first 20% of the range). Default 0.2.
	RandParetoH float64
	// RandZipfianExp is sysbench 1.1's --rand-zipfian-exp: the Zipf exponent
	// (theta). Default 0.8.
	RandZipfianExp float64

	// Percentile is --percentile: the latency percentile reported as
	// Result.LatencyPct and Interval.P95, in percent (0 < p <= 100). Default 95.
	Percentile float64

	// StorageEngine is --mysql-storage-engine: ENGINE of the tables. Default innodb.
	StorageEngine string
	// CreateTableOptions is sysbench 1.1's --create-table-options: text appended to
	// CREATE TABLE (for example "ROW_FORMAT=COMPRESSED"). Default "".
	CreateTableOptions string

	// IgnoreErrors is --mysql-ignore-errors: server error numbers that roll the
	// event back and retry it with fresh values, counted in Result.IgnoredErrors.
	// Default 1213 (deadlock), 1020 (record changed), 1205 (lock wait timeout).
	IgnoreErrors []uint16

	// ReportInterval is --report-interval: how often WriteText prints an interval
	// line and Hooks.Interval is called. 0 prints none; the per-second series is
	// kept in Result.Intervals either way. Whole seconds only.
	ReportInterval time.Duration
}

// DefaultRandSeed is the seed DefaultOptions uses, so that prepared tables and
// statement streams are the same for every revision under test.
const DefaultRandSeed int64 = 1

// DefaultOptions returns sysbench 1.0.20's defaults for oltp_read_only (1 table of
// 10000 rows, 1 thread, 10 s, range size 100, 10 point selects, special
// distribution with 12/1/75, ignore 1213,1020,1205, percentile 95, innodb), with
// no warm-up and the fixed seed DefaultRandSeed. The oltp_legacy options have
// 0.4.12's defaults (complex mode, not read-only, table sbtest), which the shared
// ones also are (table size 10000, range size 100, 10 point selects, one range of
// each kind and one update of each kind, special 12/1/75, auto-increment on).
func DefaultOptions() Options {
	return Options{
		Workload:        "oltp_read_only",
		OLTPTestMode:    "complex",
		OLTPTableName:   "sbtest",
		Tables:          1,
		TableSize:       10000,
		Threads:         1,
		Time:            10 * time.Second,
		RangeSize:       100,
		PointSelects:    10,
		SimpleRanges:    1,
		SumRanges:       1,
		OrderRanges:     1,
		DistinctRanges:  1,
		IndexUpdates:    1,
		NonIndexUpdates: 1,
		DeleteInserts:   1,
		RangeSelects:    true,
		AutoInc:         true,
		RandType:        "special",
		RandSeed:        DefaultRandSeed,
		RandSpecIter:    12,
		RandSpecPct:     1,
		RandSpecRes:     75,
		RandParetoH:     0.2,
		RandZipfianExp:  0.8,
		Percentile:      95,
		StorageEngine:   "innodb",
		IgnoreErrors:    []uint16{1213, 1020, 1205},
	}
}

// Errors returned (wrapped, with the offending value) by Options.Validate.
var (
	// ErrUnknownWorkload: Options.Workload is not one of Workloads().
	ErrUnknownWorkload = errors.New("unknown workload")
	// ErrUnknownRandType: Options.RandType is not one of RandTypes().
	ErrUnknownRandType = errors.New("unknown random distribution")
	// ErrInvalidOption: a number out of its range, an unusable storage engine or
	// table name, or an oltp_legacy option given to another workload.
	ErrInvalidOption = errors.New("invalid option")
)

// RandTypes lists the accepted values of Options.RandType.
func RandTypes() []string {
	return []string{"uniform", "gaussian", "special", "pareto", "zipfian"}
}

var engineName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

// tableName is what OLTPTableName may be: a plain identifier, used unquoted in
// the statements as sb_oltp.c does.
var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]{0,63}$`)

// Validate checks every option and returns the first problem as an error wrapping
// ErrUnknownWorkload, ErrUnknownRandType or ErrInvalidOption, naming the sysbench
// option, the value and what is accepted.
func (o *Options) Validate() error {
	if _, ok := workloads[o.Workload]; !ok {
		if s := spell.Nearest(o.Workload, Workloads()); s != "" {
			return fmt.Errorf("%w %q: did you mean %s? (known: %s)", ErrUnknownWorkload, o.Workload, s, strings.Join(Workloads(), ", "))
		}
		return fmt.Errorf("%w %q (known: %s)", ErrUnknownWorkload, o.Workload, strings.Join(Workloads(), ", "))
	}
	return o.validate()
}

// validate is Validate without the workload's name: for the engine's
// other workloads (a SQL workload file), whose options are the same.
func (o *Options) validate() error {
	if !slices.Contains(RandTypes(), o.RandType) {
		return fmt.Errorf("%w --rand-type=%q (known: %s)", ErrUnknownRandType, o.RandType, strings.Join(RandTypes(), ", "))
	}
	bad := func(opt string, v any, want string) error {
		return fmt.Errorf("%w: --%s=%v: must be %s", ErrInvalidOption, opt, v, want)
	}
	switch {
	case o.Tables < 1:
		return bad("tables", o.Tables, ">= 1")
	case o.TableSize < 1:
		return bad("table-size", o.TableSize, ">= 1")
	case int64(o.TableSize) > 1<<31-1:
		return bad("table-size", o.TableSize, "<= 2147483647 (id is a signed INTEGER)")
	case o.Threads < 1:
		return bad("threads", o.Threads, ">= 1")
	case o.Time <= 0:
		return bad("time", o.Time.Seconds(), "> 0") // in seconds, as sysbench takes it
	case o.Warmup < 0:
		return bad("warmup-time", o.Warmup.Seconds(), ">= 0")
	case o.RangeSize < 1:
		return bad("range-size", o.RangeSize, ">= 1")
	case o.RandSpecIter < 1:
		return bad("rand-spec-iter", o.RandSpecIter, ">= 1")
	case o.RandSpecPct < 0 || o.RandSpecPct > 100:
		return bad("rand-spec-pct", o.RandSpecPct, "between 0 and 100")
	case o.RandSpecRes < 0 || o.RandSpecRes > 99:
		return bad("rand-spec-res", o.RandSpecRes, "between 0 and 99")
	case !(o.RandParetoH > 0 && o.RandParetoH < 1):
		return bad("rand-pareto-h", o.RandParetoH, "between 0 and 1, exclusive")
	case !(o.RandZipfianExp >= 0):
		return bad("rand-zipfian-exp", o.RandZipfianExp, ">= 0")
	case !(o.Percentile > 0 && o.Percentile <= 100):
		return bad("percentile", o.Percentile, "in (0, 100]")
	case !engineName.MatchString(o.StorageEngine):
		return bad("mysql-storage-engine", fmt.Sprintf("%q", o.StorageEngine), "a plain engine name such as innodb")
	case o.ReportInterval < 0 || o.ReportInterval%time.Second != 0:
		return bad("report-interval", o.ReportInterval, "a whole number of seconds >= 0")
	}
	if err := o.validateLegacy(bad); err != nil {
		return err
	}
	counts := []struct {
		name string
		v    int
	}{
		{"point-selects", o.PointSelects}, {"simple-ranges", o.SimpleRanges},
		{"sum-ranges", o.SumRanges}, {"order-ranges", o.OrderRanges},
		{"distinct-ranges", o.DistinctRanges}, {"index-updates", o.IndexUpdates},
		{"non-index-updates", o.NonIndexUpdates}, {"delete-inserts", o.DeleteInserts},
	}
	for _, c := range counts {
		if c.v < 0 {
			return bad(c.name, c.v, ">= 0")
		}
	}
	return nil
}

// validateLegacy checks the options of oltp_legacy, and that they are not given
// to another workload, which would ignore them.
func (o *Options) validateLegacy(bad func(opt string, v any, want string) error) error {
	if o.Workload != "oltp_legacy" {
		switch {
		case o.OLTPTestMode != "" && o.OLTPTestMode != "complex":
			return bad("oltp-test-mode", o.OLTPTestMode, "left out: it applies to oltp_legacy (--test=oltp) only, not "+o.Workload)
		case o.OLTPReadOnly:
			return bad("oltp-read-only", "on", "off: it applies to oltp_legacy (--test=oltp) only, not "+o.Workload)
		case o.OLTPTableName != "" && o.OLTPTableName != "sbtest":
			return bad("oltp-table-name", o.OLTPTableName, "left out: it applies to oltp_legacy (--test=oltp) only; "+o.Workload+" uses sbtest1..N")
		}
		return nil
	}
	switch {
	case o.OLTPTestMode != "complex" && o.OLTPTestMode != "simple":
		return bad("oltp-test-mode", fmt.Sprintf("%q", o.OLTPTestMode), "complex or simple (nontrx and sp are not supported)")
	case !tableName.MatchString(o.OLTPTableName):
		return bad("oltp-table-name", fmt.Sprintf("%q", o.OLTPTableName), "a plain table name such as sbtest")
	case o.Tables != 1:
		return bad("tables", o.Tables, "1 for oltp_legacy: sysbench 0.4.12's oltp has one table, --oltp-table-name")
	case !slices.Contains(legacyDistTypes, o.RandType):
		return fmt.Errorf("%w --oltp-dist-type (--rand-type) %q for oltp_legacy (sb_oltp.c knows: %s)",
			ErrUnknownRandType, o.RandType, strings.Join(legacyDistTypes, ", "))
	}
	return nil
}

// seed returns the seed to derive generators from: RandSeed, or the clock when
// RandSeed is 0 (sysbench's rule).
func (o *Options) seed() int64 {
	if o.RandSeed != 0 {
		return o.RandSeed
	}
	return time.Now().UnixNano()
}

// ignores reports whether server error number code is in IgnoreErrors.
func (o *Options) ignores(code uint16) bool {
	return slices.Contains(o.IgnoreErrors, code)
}

// DataKey returns the options that decide what Prepare loads, as one string:
// the workload, table count and size, seed, distribution and its parameters
// (k is drawn from it), engine, table options, auto-increment and the legacy
// table's name. Options with equal DataKeys prepare identical tables, so a
// prepared datadir can be reused between them.
func (o Options) DataKey() string {
	return fmt.Sprintf("%s tables=%d size=%d seed=%d rand=%s/%d/%d/%d/%g/%g engine=%s options=%q auto-inc=%v legacy-table=%s",
		o.Workload, o.Tables, o.TableSize, o.RandSeed, o.RandType, o.RandSpecIter, o.RandSpecPct, o.RandSpecRes,
		o.RandParetoH, o.RandZipfianExp, o.StorageEngine, o.CreateTableOptions, o.AutoInc, o.OLTPTableName)
}

// Summary describes o in one line for reports: the workload, threads, tables and
// rows, distribution, window and warm-up, then every per-event option that
// differs from sysbench's default ("point-selects=1 skip-trx=on"), so that a
// stored result says what was measured.
func (o Options) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %d thread(s), %d table(s) x %d rows, %s ids, %s window after %s warm-up", o.Workload, o.Threads,
		o.Tables, o.TableSize, o.RandType, o.Time, o.Warmup)
	d := DefaultOptions()
	for _, f := range []struct {
		name    string
		v, dflt any
	}{
		{"range-size", o.RangeSize, d.RangeSize}, {"point-selects", o.PointSelects, d.PointSelects},
		{"simple-ranges", o.SimpleRanges, d.SimpleRanges}, {"sum-ranges", o.SumRanges, d.SumRanges},
		{"order-ranges", o.OrderRanges, d.OrderRanges}, {"distinct-ranges", o.DistinctRanges, d.DistinctRanges},
		{"index-updates", o.IndexUpdates, d.IndexUpdates}, {"non-index-updates", o.NonIndexUpdates, d.NonIndexUpdates},
		{"delete-inserts", o.DeleteInserts, d.DeleteInserts}, {"range-selects", o.RangeSelects, d.RangeSelects},
		{"skip-trx", o.SkipTrx, d.SkipTrx}, {"auto-inc", o.AutoInc, d.AutoInc}, {"rand-seed", o.RandSeed, d.RandSeed},
		{"mysql-storage-engine", o.StorageEngine, d.StorageEngine}, {"create-table-options", o.CreateTableOptions, d.CreateTableOptions},
		{"oltp-test-mode", o.OLTPTestMode, d.OLTPTestMode}, {"oltp-read-only", o.OLTPReadOnly, d.OLTPReadOnly},
		{"oltp-table-name", o.OLTPTableName, d.OLTPTableName},
	} {
		if f.v != f.dflt {
			v := fmt.Sprint(f.v)
			switch f.v {
			case true:
				v = "on"
			case false:
				v = "off"
			}
			fmt.Fprintf(&b, ", %s=%s", f.name, v)
		}
	}
	return b.String()
}
