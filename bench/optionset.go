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

// set applies one option by normalised name; it returns a note for the
// user ("" for none). Errors: ErrUnknownOption, ErrInvalidOption, or a value
// that does not parse, naming the option as given.
func (o *Options) set(key, v string, legacy *legacyState) (string, error) {
	if to, ok := renamedOptions[key]; ok {
		_, err := optionSetters[to](o, key, v, legacy)
		return fmt.Sprintf("legacy --%s is --%s", key, to), err
	}
	if ignoredOptions[key] {
		return fmt.Sprintf("--%s=%s ignored (perfbisect speaks MySQL's protocol with server-side prepared statements; connection options apply to perfbisect bench only)", key, v), nil
	}
	if f, ok := optionSetters[key]; ok {
		return f(o, key, v, legacy)
	}
	return "", fmt.Errorf("%w --%s", ErrUnknownOption, key)
}

// renamedOptions are the sysbench 0.4 (and oltp-) names of options that
// sysbench 1.0 names otherwise: set as the new one, with a note.
var renamedOptions = map[string]string{
	"num-threads": "threads", "max-time": "time", "oltp-dist-type": "rand-type",
	"oltp-dist-iter": "rand-spec-iter", "oltp-dist-pct": "rand-spec-pct", "oltp-dist-res": "rand-spec-res",
	"oltp-tables-count": "tables", "oltp-table-size": "table-size",
	"oltp-range-size": "range-size", "oltp-point-selects": "point-selects", "oltp-simple-ranges": "simple-ranges",
	"oltp-sum-ranges": "sum-ranges", "oltp-order-ranges": "order-ranges", "oltp-distinct-ranges": "distinct-ranges",
	"oltp-index-updates": "index-updates", "oltp-non-index-updates": "non-index-updates",
	"oltp-skip-trx": "skip-trx", "oltp-auto-inc": "auto-inc", "mysql-table-engine": "mysql-storage-engine",
}

// ignoredOptions are sysbench's options that do not change what the
// built-in workload does (output, driver and connection options).
var ignoredOptions = map[string]bool{
	"forced-shutdown": true, "histogram": true, "verbosity": true, "db-driver": true, "db-ps-mode": true, "mysql-dry-run": true,
	"mysql-ssl": true, "mysql-host": true, "mysql-port": true, "mysql-socket": true, "mysql-user": true, "mysql-password": true,
	"mysql-db": true, "pgsql-variant": true, "oltp-connect-delay": true, "db-debug": true, "debug": true, "validate": true,
	"thread-stack-size": true, "config-file": true,
}

// optionSetter sets one option to v; name is the option as the user gave it
// (for messages). It returns a note for the user ("" for none).
type optionSetter func(o *Options, name, v string, legacy *legacyState) (string, error)

// fieldOption sets the field that field returns with parse (parseInt,
// parseBool, ...).
func fieldOption[T any](parse func(name, v string, p *T) error, field func(o *Options) *T) optionSetter {
	return func(o *Options, name, v string, _ *legacyState) (string, error) { return "", parse(name, v, field(o)) }
}

// parseString takes any value.
func parseString(_, v string, p *string) error { *p = v; return nil }

// countOption sets a per-event count option (countField).
func countOption(key string) optionSetter {
	return fieldOption(parseInt, func(o *Options) *int { return o.countField(key) })
}

// optionSetters are the options the built-in workload takes, by sysbench
// 1.0's name (and 0.4's --test and oltp- options of oltp_legacy).
var optionSetters = map[string]optionSetter{
	// sysbench 1.0 general options
	"threads":         fieldOption(parseInt, func(o *Options) *int { return &o.Threads }),
	"time":            fieldOption(parseSeconds, func(o *Options) *time.Duration { return &o.Time }),
	"warmup-time":     fieldOption(parseSeconds, func(o *Options) *time.Duration { return &o.Warmup }),
	"report-interval": fieldOption(parseSeconds, func(o *Options) *time.Duration { return &o.ReportInterval }),
	"percentile":      fieldOption(parseFloat, func(o *Options) *float64 { return &o.Percentile }),
	"events":          setEvents,
	"max-requests":    setEvents,
	"init-rng": func(_ *Options, _, v string, _ *legacyState) (string, error) {
		return fmt.Sprintf("legacy --init-rng=%s ignored: random numbers come from --rand-seed (fixed by default, so every revision gets the same statements)", v), nil
	},
	"seed-rng": func(o *Options, name, v string, _ *legacyState) (string, error) {
		var n int64
		if err := parseInt64(name, v, &n); err != nil || n == 0 {
			return "", err // 0: ignored, as in sysbench
		}
		o.RandSeed = n
		return "legacy --seed-rng is --rand-seed", nil
	},
	// random numbers
	"rand-type": func(o *Options, _, v string, _ *legacyState) (string, error) {
		t := strings.ToLower(v)
		if t == "gauss" {
			t = "gaussian"
		}
		o.RandType = t
		return "", nil
	},
	"rand-seed":        fieldOption(parseInt64, func(o *Options) *int64 { return &o.RandSeed }),
	"rand-spec-iter":   fieldOption(parseInt, func(o *Options) *int { return &o.RandSpecIter }),
	"rand-spec-pct":    fieldOption(parseInt, func(o *Options) *int { return &o.RandSpecPct }),
	"rand-spec-res":    fieldOption(parseInt, func(o *Options) *int { return &o.RandSpecRes }),
	"rand-pareto-h":    fieldOption(parseFloat, func(o *Options) *float64 { return &o.RandParetoH }),
	"rand-zipfian-exp": fieldOption(parseFloat, func(o *Options) *float64 { return &o.RandZipfianExp }),
	// oltp_common.lua
	"tables":               fieldOption(parseInt, func(o *Options) *int { return &o.Tables }),
	"table-size":           fieldOption(parseInt, func(o *Options) *int { return &o.TableSize }),
	"range-size":           countOption("range-size"),
	"point-selects":        countOption("point-selects"),
	"simple-ranges":        countOption("simple-ranges"),
	"sum-ranges":           countOption("sum-ranges"),
	"order-ranges":         countOption("order-ranges"),
	"distinct-ranges":      countOption("distinct-ranges"),
	"index-updates":        countOption("index-updates"),
	"non-index-updates":    countOption("non-index-updates"),
	"delete-inserts":       countOption("delete-inserts"),
	"range-selects":        fieldOption(parseBool, func(o *Options) *bool { return &o.RangeSelects }),
	"skip-trx":             fieldOption(parseBool, func(o *Options) *bool { return &o.SkipTrx }),
	"auto-inc":             fieldOption(parseBool, func(o *Options) *bool { return &o.AutoInc }),
	"secondary":            setSecondary,
	"create-secondary":     setSecondary,
	"mysql-storage-engine": fieldOption(parseString, func(o *Options) *string { return &o.StorageEngine }),
	"create-table-options": fieldOption(parseString, func(o *Options) *string { return &o.CreateTableOptions }),
	"mysql-table-options":  fieldOption(parseString, func(o *Options) *string { return &o.CreateTableOptions }),
	"mysql-ignore-errors": func(o *Options, _, v string, _ *legacyState) (string, error) {
		return "", o.setIgnoreErrors(v)
	},
	// legacy 0.4.12 --test=oltp: the options of oltp_legacy
	"test": func(o *Options, _, v string, legacy *legacyState) (string, error) {
		if strings.EqualFold(v, "oltp") {
			legacy.test = true
			o.Workload = "oltp_legacy"
			return "", nil
		}
		o.Workload = WorkloadName(v)
		return "", nil
	},
	"oltp-read-only": fieldOption(parseBool, func(o *Options) *bool { return &o.OLTPReadOnly }),
	"oltp-test-mode": func(o *Options, _, v string, _ *legacyState) (string, error) {
		switch v {
		case "complex", "simple":
			o.OLTPTestMode = v
			return "", nil
		}
		return "", fmt.Errorf("%w: --oltp-test-mode=%s: only complex and simple are supported", ErrInvalidOption, v)
	},
	"oltp-table-name": fieldOption(parseString, func(o *Options) *string { return &o.OLTPTableName }),
}

// setEvents refuses a limit on events (--events, 0.4's --max-requests): runs
// end at --time only. 0 (no limit) is taken.
func setEvents(_ *Options, name, v string, _ *legacyState) (string, error) {
	var n int
	if err := parseInt(name, v, &n); err != nil || n == 0 {
		return "", err
	}
	return "", fmt.Errorf("%w: --%s=%s: runs are limited by --time only", ErrInvalidOption, name, v)
}

// setSecondary refuses a table without index k_N (--secondary on,
// --create-secondary off): the workload always has both indexes.
func setSecondary(_ *Options, name, v string, _ *legacyState) (string, error) {
	var b bool
	if err := parseBool(name, v, &b); err != nil {
		return "", err
	}
	if b != (name == "create-secondary") {
		return "", fmt.Errorf("%w: --%s=%s: the workload always has PRIMARY KEY (id) and index k_N", ErrInvalidOption, name, v)
	}
	return "", nil
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
		return fmt.Errorf("%w: --%s=%s: want whole seconds (60) or a duration (1.5s, 2m), a month at most", ErrInvalidOption, key, v)
	}
	*p = d
	return nil
}
