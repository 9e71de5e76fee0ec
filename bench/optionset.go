package bench

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrUnknownOption is wrapped by Set and ParseArgs for a name that is neither a
// sysbench option the workload honours nor a legacy one it translates.
var ErrUnknownOption = errors.New("unknown sysbench option")

// Set sets one option from its sysbench name (with - or _; "table-size",
// "oltp_table_size", "num-threads" ...) and command-line text. It returns a note
// when a legacy name was translated or an option is ignored, and an error
// wrapping ErrUnknownOption or ErrInvalidOption.
func (o *Options) Set(name, value string) (note string, err error) {
	s := o.Setter()
	note, err = s.Set(name, value)
	if n := s.Done(); n != "" {
		note = strings.TrimPrefix(note+"; "+n, "; ")
	}
	return note, err
}

// A Setter sets a command line's options one at a time (Set), and then
// says what legacy --test=oltp became once all are set (Done).
type Setter struct {
	o      *Options
	legacy legacyState
}

// Setter returns a Setter of o.
func (o *Options) Setter() *Setter { return &Setter{o: o} }

// Set is Options.Set without the note of Done.
func (s *Setter) Set(name, value string) (note string, err error) {
	return s.o.set(OptionName(name), value, &s.legacy)
}

// Done returns the note saying what legacy --test=oltp runs as, or "".
func (s *Setter) Done() string { return s.legacy.finish(s.o) }

// IsBoolOption reports whether the option name (OptionName's form) takes
// on/off, so that a bare --name means on.
func IsBoolOption(name string) bool {
	_, ok := boolOptions[name]
	return ok
}

// OptionName is an option's name as Set compares it: without leading
// dashes, lower case, with - for _ ("OLTP_Table_Size" is "oltp-table-size").
func OptionName(name string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimLeft(name, "-"), "_", "-"))
}

// WorkloadName turns "oltp_read_only", "oltp_read_only.lua" or a path to it into
// the workload name.
func WorkloadName(s string) string {
	return strings.TrimSuffix(filepath.Base(s), ".lua")
}

// legacyState remembers whether --test=oltp was given, for the note that says
// what it became once every option is read.
type legacyState struct {
	test bool // --test=oltp given
}

// finish notes what legacy --test=oltp runs as.
func (l *legacyState) finish(o *Options) string {
	if !l.test || o.Workload != "oltp_legacy" {
		return ""
	}
	var b strings.Builder
	b.WriteString("legacy --test=oltp runs as oltp_legacy, sysbench 0.4.12's oltp (table " + o.OLTPTableName +
		" with its index k created before the load; ids from sb_oltp.c's " + o.RandType + " distribution")
	if o.RandType == "special" {
		fmt.Fprintf(&b, " with --oltp-dist-iter=%d --oltp-dist-pct=%d --oltp-dist-res=%d", o.RandSpecIter, o.RandSpecPct, o.RandSpecRes)
	}
	switch {
	case o.OLTPTestMode == "simple":
		b.WriteString("); --oltp-test-mode=simple: one point select per event")
		return b.String()
	case o.OLTPReadOnly:
		b.WriteString("); --oltp-read-only=on: point selects and 4 ranges")
	default:
		b.WriteString("); complex mode: point selects, 4 ranges, index and non-index updates, one more index update, DELETE and INSERT of its id")
	}
	if o.SkipTrx {
		b.WriteString(", no BEGIN/COMMIT (--oltp-skip-trx)")
	} else {
		b.WriteString(" between BEGIN and COMMIT")
	}
	return b.String()
}

// boolOptions are the options that take on/off (a bare --name means on).
var boolOptions = map[string]bool{
	"range-selects": true, "skip-trx": true, "auto-inc": true, "oltp-read-only": true,
	"oltp-skip-trx": true, "oltp-auto-inc": true, "secondary": true, "create-secondary": true, "init-rng": true,
}

// set applies one option by normalised name.
func (o *Options) set(key, v string, legacy *legacyState) (string, error) {
	renamed := func(to string) string { return fmt.Sprintf("legacy --%s is --%s", key, to) }
	intp := func(p *int) error { return parseInt(key, v, p) }
	switch key {
	// sysbench 1.0 general options
	case "threads":
		return "", intp(&o.Threads)
	case "num-threads":
		return renamed("threads"), intp(&o.Threads)
	case "time":
		return "", parseSeconds(key, v, &o.Time)
	case "max-time":
		return renamed("time"), parseSeconds(key, v, &o.Time)
	case "warmup-time":
		return "", parseSeconds(key, v, &o.Warmup)
	case "report-interval":
		return "", parseSeconds(key, v, &o.ReportInterval)
	case "percentile":
		return "", parseFloat(key, v, &o.Percentile)
	case "events", "max-requests":
		var n int
		if err := intp(&n); err != nil || n == 0 {
			return "", err
		}
		return "", fmt.Errorf("%w: --%s=%s: runs are limited by --time only", ErrInvalidOption, key, v)
	case "forced-shutdown", "histogram", "verbosity", "db-driver", "db-ps-mode", "mysql-dry-run", "mysql-ssl",
		"mysql-host", "mysql-port", "mysql-socket", "mysql-user", "mysql-password", "mysql-db", "pgsql-variant",
		"oltp-connect-delay", "db-debug", "debug", "validate", "thread-stack-size", "config-file":
		return fmt.Sprintf("--%s=%s ignored (perfbisect speaks MySQL's protocol with server-side prepared statements; connection options apply to perfbisect bench only)", key, v), nil
	case "init-rng":
		return fmt.Sprintf("legacy --init-rng=%s ignored: random numbers come from --rand-seed (fixed by default, so every revision gets the same statements)", v), nil
	case "seed-rng":
		var n int64
		if err := parseInt64(key, v, &n); err != nil || n == 0 {
			return "", err // 0: ignored, as in sysbench
		}
		o.RandSeed = n
		return renamed("rand-seed"), nil
	// random numbers
	case "rand-type", "oltp-dist-type":
		t := strings.ToLower(v)
		if t == "gauss" {
			t = "gaussian"
		}
		o.RandType = t
		if key == "oltp-dist-type" {
			return renamed("rand-type"), nil
		}
		return "", nil
	case "rand-seed":
		return "", parseInt64(key, v, &o.RandSeed)
	case "rand-spec-iter":
		return "", intp(&o.RandSpecIter)
	case "oltp-dist-iter":
		return renamed("rand-spec-iter"), intp(&o.RandSpecIter)
	case "rand-spec-pct":
		return "", intp(&o.RandSpecPct)
	case "oltp-dist-pct":
		return renamed("rand-spec-pct"), intp(&o.RandSpecPct)
	case "rand-spec-res":
		return "", intp(&o.RandSpecRes)
	case "oltp-dist-res":
		return renamed("rand-spec-res"), intp(&o.RandSpecRes)
	case "rand-pareto-h":
		return "", parseFloat(key, v, &o.RandParetoH)
	case "rand-zipfian-exp":
		return "", parseFloat(key, v, &o.RandZipfianExp)
	// oltp_common.lua
	case "tables":
		return "", intp(&o.Tables)
	case "oltp-tables-count":
		return renamed("tables"), intp(&o.Tables)
	case "table-size":
		return "", intp(&o.TableSize)
	case "oltp-table-size":
		return renamed("table-size"), intp(&o.TableSize)
	case "range-size", "point-selects", "simple-ranges", "sum-ranges", "order-ranges", "distinct-ranges",
		"index-updates", "non-index-updates", "delete-inserts":
		return "", intp(o.countField(key))
	case "oltp-range-size", "oltp-point-selects", "oltp-simple-ranges", "oltp-sum-ranges", "oltp-order-ranges",
		"oltp-distinct-ranges", "oltp-index-updates", "oltp-non-index-updates":
		to := strings.TrimPrefix(key, "oltp-")
		return renamed(to), intp(o.countField(to))
	case "range-selects":
		return "", parseBool(key, v, &o.RangeSelects)
	case "skip-trx":
		return "", parseBool(key, v, &o.SkipTrx)
	case "oltp-skip-trx":
		return renamed("skip-trx"), parseBool(key, v, &o.SkipTrx)
	case "auto-inc":
		return "", parseBool(key, v, &o.AutoInc)
	case "oltp-auto-inc":
		return renamed("auto-inc"), parseBool(key, v, &o.AutoInc)
	case "secondary", "create-secondary":
		var b bool
		if err := parseBool(key, v, &b); err != nil {
			return "", err
		}
		if b != (key == "create-secondary") {
			return "", fmt.Errorf("%w: --%s=%s: the workload always has PRIMARY KEY (id) and index k_N", ErrInvalidOption, key, v)
		}
		return "", nil
	case "mysql-storage-engine":
		o.StorageEngine = v
		return "", nil
	case "mysql-table-engine":
		o.StorageEngine = v
		return renamed("mysql-storage-engine"), nil
	case "create-table-options", "mysql-table-options":
		o.CreateTableOptions = v
		return "", nil
	case "mysql-ignore-errors":
		return "", o.setIgnoreErrors(v)
	// legacy 0.4.12 --test=oltp: the options of oltp_legacy
	case "test":
		if strings.EqualFold(v, "oltp") {
			legacy.test = true
			o.Workload = "oltp_legacy"
			return "", nil
		}
		o.Workload = WorkloadName(v)
		return "", nil
	case "oltp-read-only":
		return "", parseBool(key, v, &o.OLTPReadOnly)
	case "oltp-test-mode":
		switch v {
		case "complex", "simple":
			o.OLTPTestMode = v
			return "", nil
		}
		return "", fmt.Errorf("%w: --oltp-test-mode=%s: only complex and simple are supported", ErrInvalidOption, v)
	case "oltp-table-name":
		o.OLTPTableName = v
		return "", nil
	}
	return "", fmt.Errorf("%w --%s", ErrUnknownOption, key)
}

// countField returns the field of a per-event count option.
func (o *Options) countField(key string) *int {
	return map[string]*int{
		"range-size": &o.RangeSize, "point-selects": &o.PointSelects, "simple-ranges": &o.SimpleRanges,
		"sum-ranges": &o.SumRanges, "order-ranges": &o.OrderRanges, "distinct-ranges": &o.DistinctRanges,
		"index-updates": &o.IndexUpdates, "non-index-updates": &o.NonIndexUpdates, "delete-inserts": &o.DeleteInserts,
	}[key]
}

// setIgnoreErrors reads --mysql-ignore-errors: a comma list of numbers, or "none".
func (o *Options) setIgnoreErrors(v string) error {
	o.IgnoreErrors = nil
	if v == "none" || v == "" {
		return nil
	}
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 16)
		if err != nil {
			return fmt.Errorf("%w: --mysql-ignore-errors=%s: want error numbers separated by commas, or none ('all' is not supported)", ErrInvalidOption, v)
		}
		o.IgnoreErrors = append(o.IgnoreErrors, uint16(n))
	}
	return nil
}

func parseInt(key, v string, p *int) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("%w: --%s=%s: not an integer", ErrInvalidOption, key, v)
	}
	*p = n
	return nil
}

func parseInt64(key, v string, p *int64) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: --%s=%s: not an integer", ErrInvalidOption, key, v)
	}
	*p = n
	return nil
}

func parseFloat(key, v string, p *float64) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return fmt.Errorf("%w: --%s=%s: not a number", ErrInvalidOption, key, v)
	}
	*p = f
	return nil
}

// IsBoolWord reports whether s is a boolean value sysbench accepts (on,
// off, true, false, yes, no, 1, 0).
func IsBoolWord(s string) bool {
	var b bool
	return parseBool("", s, &b) == nil
}

func parseBool(key, v string, p *bool) error {
	switch strings.ToLower(v) {
	case "on", "true", "yes", "1":
		*p = true
	case "off", "false", "no", "0":
		*p = false
	default:
		return fmt.Errorf("%w: --%s=%s: want on or off", ErrInvalidOption, key, v)
	}
	return nil
}

// parseSeconds reads whole seconds ("60", as sysbench) or a Go duration ("1m").
func parseSeconds(key, v string, p *time.Duration) error {
	const most = 31 * 24 * time.Hour
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 || n > int64(most/time.Second) {
			return fmt.Errorf("%w: --%s=%s: want seconds from 0 to %d (a month)", ErrInvalidOption, key, v, int64(most/time.Second))
		}
		*p = time.Duration(n) * time.Second
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > most {
		return fmt.Errorf("%w: --%s=%s: want seconds (a month at most)", ErrInvalidOption, key, v)
	}
	*p = d
	return nil
}
