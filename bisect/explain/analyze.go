package explain

import (
	"errors"
	"io/fs"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/serverctl"
	"github.com/perfbisect/perfbisect/stats"
)

// Run is one profiled run of a side: its profile, its transactions (the
// workload's events in the window), throughput, the server's CPU per
// transaction, SHOW GLOBAL STATUS deltas over the window and the server's
// variables at its end.
type Run struct {
	Profile   *profile.Profile
	Events    int64
	TPS       float64
	CPUPerTxn float64 // microseconds
	Status    map[string]int64
	Variables map[string]string
	// Statements are the workload's statement times and plans (nil where
	// the workload cannot time them: sysbench).
	Statements []bench.StatementTime
}

// ReadRun reads a profiled run's directory (what Profiler.Probe's end
// returned) apart from its profile. Errors: a file is missing or unreadable.
func ReadRun(dir string) (Run, error) {
	var r Run
	if err := readJSON(filepath.Join(dir, statusFile), &r.Status); err != nil {
		return r, err
	}
	if err := readJSON(filepath.Join(dir, measure.StatementsFile), &r.Statements); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return r, err
	}
	return r, readJSON(filepath.Join(dir, variablesFile), &r.Variables)
}

// NoValue is a SettingChange's value on the side whose server has no such
// variable.
const NoValue = "(none)"

// Kinds of a change (Explanation.Kind).
const (
	KindCPU     = "CPU"     // more server CPU per transaction carries most of the throughput's change
	KindWaiting = "waiting" // the same CPU per transaction, less throughput: the server waits
	KindNone    = "none"    // throughput did not fall
)

// Explanation is why head is slower than base: the kind of change, the
// functions whose CPU per transaction changed most, the counters per
// transaction that changed, and the settings the servers differ in.
type Explanation struct {
	Base      string  `json:"base"` // the sides, as explain names them
	Head      string  `json:"head"`
	BaseRuns  int     `json:"base_runs"`
	HeadRuns  int     `json:"head_runs"`
	TPSChange float64 `json:"tps_change"`         // relative, of the medians
	CPUChange float64 `json:"cpu_per_txn_change"` // relative, of the medians of server CPU per transaction
	// CPUShare is the part of the throughput's change that more CPU per
	// transaction accounts for (log ratio over log ratio; 1: all of it).
	CPUShare  float64          `json:"cpu_share"`
	Kind      string           `json:"kind"`
	Coverage  float64          `json:"interval_coverage"` // of every interval below
	Functions []FunctionChange `json:"functions,omitempty"`
	Counters  []CounterChange  `json:"counters,omitempty"`
	// Waits are the performance_schema wait events whose time per
	// transaction changed (none where performance_schema is missing).
	Waits []WaitChange `json:"waits,omitempty"`
	// Statements are the workload's statements whose latency or plan
	// changed: the workload's own timing (the client's latency), or under
	// sysbench performance_schema's statement digests (the server's time:
	// StatementsFromDigests).
	Statements            []StatementChange `json:"statements,omitempty"`
	StatementsFromDigests bool              `json:"statements_from_digests,omitempty"`
	Settings              []SettingChange   `json:"settings,omitempty"`
	// OnlyBase and OnlyHead are the variables only one server has, when
	// there are more than a few (two flavors, two series; Settings lists
	// a few one by one, NoValue on the side without).
	OnlyBase []string `json:"only_base,omitempty"`
	OnlyHead []string `json:"only_head,omitempty"`
	Sources  []string `json:"sources"` // what the explanation was made from
	// Flame is the differential flame graph (FlameGraph, paths of 0.5% of
	// the CPU or more); nil without profiles.
	Flame *Frame `json:"flame,omitempty"`
}

// FunctionChange is one function's CPU per transaction on both sides
// (microseconds; medians over the runs): self (its own samples, and those
// of the library functions it called: memcpy, malloc, locks) and inclusive
// (every sample it is on the stack of), and the change in self time with
// its interval (the range of the pairwise differences of the runs).
type FunctionChange struct {
	Name      string  `json:"name"`
	File      string  `json:"file"` // the binary or library it is in
	BaseSelf  float64 `json:"base_self_us"`
	HeadSelf  float64 `json:"head_self_us"`
	BaseTotal float64 `json:"base_inclusive_us"`
	HeadTotal float64 `json:"head_inclusive_us"`
	Change    float64 `json:"self_change_us"`
	Lo        float64 `json:"self_change_lo_us"`
	Hi        float64 `json:"self_change_hi_us"`
	Share     float64 `json:"share"` // of the change in the server's CPU per transaction
	// Caller is the function whose calls carry most of the self change
	// (the caller's own change of this function's self time, the same
	// way): for a generic function (a sleep, a latch's spin, a copy),
	// where the change came from. "" for none (a thread's first frame).
	Caller string `json:"caller,omitempty"`
}

// CounterChange is one SHOW GLOBAL STATUS counter per transaction on both
// sides (medians over the runs) and its relative change with an interval
// (as FunctionChange's, relative to the base's median).
type CounterChange struct {
	Name   string  `json:"name"`
	Base   float64 `json:"base_per_txn"`
	Head   float64 `json:"head_per_txn"`
	Change float64 `json:"change"`
	Lo     float64 `json:"change_lo"`
	Hi     float64 `json:"change_hi"`
	New    bool    `json:"new,omitempty"` // the base never counted it (no relative change)
}

// SettingChange is a variable the two servers show different values of.
type SettingChange struct {
	Name string `json:"name"`
	Base string `json:"base"`
	Head string `json:"head"`
}

// Options bound an explanation's tables.
type Options struct {
	TopFunctions  int // 0: 15
	TopCounters   int // 0: 15
	TopStatements int // 0: 15
}

// Explain compares head's profiled runs with base's. Functions are ranked
// by the change of their self time per transaction, statements by the
// change of the time they take of a transaction, wait events by the change
// of their time per transaction, counters by the size of their relative
// change; only changes whose interval excludes zero are listed (and
// statements whose plan changed). Statements and waits are there when
// every run has them. Variables that always differ between two servers
// (pid file, paths, ports, the version) are left out of Settings.
func Explain(baseName, headName string, base, head []Run, o Options) Explanation {
	if o.TopFunctions == 0 {
		o.TopFunctions = 15
	}
	if o.TopCounters == 0 {
		o.TopCounters = 15
	}
	e := Explanation{Base: baseName, Head: headName, BaseRuns: len(base), HeadRuns: len(head), Coverage: Coverage(len(base), len(head))}
	tps := func(rs []Run) float64 { return stats.Median(collect(rs, func(r Run) float64 { return r.TPS })) }
	cpu := func(rs []Run) float64 { return stats.Median(collect(rs, func(r Run) float64 { return r.CPUPerTxn })) }
	bt, ht, bc, hc := tps(base), tps(head), cpu(base), cpu(head)
	e.TPSChange, e.CPUChange = ht/bt-1, hc/bc-1
	slower := below(collect(base, func(r Run) float64 { return r.TPS }), collect(head, func(r Run) float64 { return r.TPS }))
	cpuBelow := below(collect(base, func(r Run) float64 { return r.CPUPerTxn }), collect(head, func(r Run) float64 { return r.CPUPerTxn }))
	cpuRose := 1-cpuBelow >= clearly && e.CPUChange >= minCPUChange
	if ht < bt {
		e.CPUShare = math.Log(hc/bc) / math.Log(bt/ht)
	}
	switch {
	case cpuRose && (e.CPUShare >= 0.5 || !(ht < bt)):
		// More work per transaction: the profiled runs' throughput may not
		// show it (perf and the client share the CPUs); the verdict's runs
		// measured that.
		e.Kind = KindCPU
	case ht < bt && slower >= clearly:
		e.Kind = KindWaiting
	default:
		e.Kind, e.CPUShare = KindNone, 0
	}
	if hasProfiles(base) && hasProfiles(head) {
		change := hc - bc
		if max(cpuBelow, 1-cpuBelow) < clearly {
			change = 0 // no change of CPU per transaction beyond the runs' spread to share out
		}
		e.Functions = functions(base, head, change, o.TopFunctions)
		e.Flame = FlameGraph(base, head, 0.005)
		e.Sources = append(e.Sources, "perf cpu-clock samples of the server")
	}
	if hasStatements(base) && hasStatements(head) {
		if o.TopStatements == 0 {
			o.TopStatements = 15
		}
		e.Statements = statements(base, head, o.TopStatements)
		if e.StatementsFromDigests = base[0].Statements[0].Digest != ""; e.StatementsFromDigests {
			e.Sources = append(e.Sources, "performance_schema's statement digests (the server's time per statement, no round trip; statements sent as text only) and EXPLAIN of a sample of each")
		} else {
			e.Sources = append(e.Sources, "the workload's own latency per statement (the client's: round trip included) and EXPLAIN of a sample of each")
		}
	}
	if hasWaits(base) && hasWaits(head) {
		e.Waits = waits(base, head, o.TopCounters)
		e.Sources = append(e.Sources, "performance_schema's time waited per wait event per transaction (its file I/O and lock instruments on for the profiled runs)")
	}
	e.Counters = counters(base, head, o.TopCounters)
	e.Sources = append(e.Sources, "SHOW GLOBAL STATUS deltas per transaction")
	if hasMetrics(base) && hasMetrics(head) {
		e.Sources = append(e.Sources, "information_schema.INNODB_METRICS deltas per transaction (all counters on for the profiled runs)")
	}
	e.Sources = append(e.Sources, "SHOW GLOBAL VARIABLES")
	e.Settings = settings(&e, base, head)
	return e
}

// minCPUChange is the smallest rise of CPU per transaction that is a why.
const minCPUChange = 0.02

// clearly is the share of the pairs of runs (one of each side) that must
// agree for a change of throughput or CPU to be explained: 7 of 9 at 3 runs
// a side; noise splits them about evenly.
const clearly = 0.75

// below is the share of the pairs (one run of each side) in which the
// head's value is below the base's (ties count half).
func below(base, head []float64) float64 {
	n := 0.0
	for _, b := range base {
		for _, h := range head {
			switch {
			case h < b:
				n++
			case h == b:
				n += 0.5
			}
		}
	}
	return n / float64(max(len(base)*len(head), 1))
}

// Coverage is the confidence of the interval made of the smallest and the
// largest of the n*m pairwise differences (Moses' interval with k = 1): one
// minus twice the chance that every difference is on one side of the true
// shift, 1/C(n+m, n) each.
func Coverage(n, m int) float64 {
	if n == 0 || m == 0 {
		return 0
	}
	c := 1.0
	for i := 1; i <= n; i++ {
		c = c * float64(m+i) / float64(i)
	}
	return 1 - 2/c
}

func collect(rs []Run, f func(Run) float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

func hasMetrics(rs []Run) bool {
	for _, r := range rs {
		for k := range r.Status {
			if strings.HasPrefix(k, MetricPrefix) {
				return true
			}
		}
	}
	return false
}

func hasProfiles(rs []Run) bool {
	for _, r := range rs {
		if r.Profile == nil {
			return false
		}
	}
	return len(rs) > 0
}

// PairRange is the smallest and largest head-base difference of one value
// of each side (an interval of the change that covers it with Coverage).
func PairRange(base, head []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, b := range base {
		for _, h := range head {
			lo, hi = min(lo, h-b), max(hi, h-b)
		}
	}
	return lo, hi
}

// helper reports whether a frame is a helper whose self time belongs to
// the function that called it: anything in a shared library or the kernel
// (memcpy, malloc, locks, system calls), and the server's own string,
// memory and formatting helpers (helperNames).
func helper(name, file string) bool {
	base := filepath.Base(file)
	return strings.Contains(base, ".so") || strings.HasPrefix(file, "[") || helperNames.MatchString(name)
}

// helperNames are the MySQL-family servers' generic helpers: strings,
// allocation, formatting, and the C++ library inlined into the server.
var helperNames = regexp.MustCompile(`^(String::|Binary_string::|Static_binary_string::|my_(malloc|realloc|free|vsnprintf|snprintf|strnxfrm|hash_sort|memdup|strdup)|alloc_root|memdup_root|strmake_root|mem_heap_|ut_allocator|ut_malloc|std::|operator new|operator delete|__)`)

// perTxn is a run's CPU per transaction by function (microseconds): self
// (a library frame's samples go to its nearest caller in the server),
// inclusive (once per sample however deep the recursion), and self by
// the function's caller (callers[function][caller]).
func perTxn(r Run) (self, total map[string]float64, files map[string]string, callers map[string]map[string]float64) {
	self, total, files, callers = map[string]float64{}, map[string]float64{}, map[string]string{}, map[string]map[string]float64{}
	events := float64(max(r.Events, 1))
	for _, s := range r.Profile.Sample {
		us := float64(s.Value[1]) / 1e3 / events
		owner := -1
		for i, l := range s.Location {
			if f := l.Line[0].Function; !helper(f.Name, f.Filename) {
				owner = i
				break
			}
		}
		if owner < 0 {
			owner = 0
		}
		seen := map[string]bool{}
		for i, l := range s.Location {
			f := l.Line[0].Function
			if i == owner {
				self[f.Name] += us
				if i+1 < len(s.Location) {
					if callers[f.Name] == nil {
						callers[f.Name] = map[string]float64{}
					}
					callers[f.Name][s.Location[i+1].Line[0].Function.Name] += us
				}
			}
			if !seen[f.Name] {
				seen[f.Name] = true
				total[f.Name] += us
				files[f.Name] = f.Filename
			}
		}
	}
	return self, total, files, callers
}

func functions(base, head []Run, cpuChange float64, top int) []FunctionChange {
	type series struct {
		self, total []float64
		callers     map[string]float64 // self by caller, the runs' mean
	}
	files := map[string]string{}
	side := func(rs []Run) map[string]*series {
		out := map[string]*series{}
		for i, r := range rs {
			self, total, fs, callers := perTxn(r)
			for name := range total {
				s := out[name]
				if s == nil {
					s = &series{self: make([]float64, len(rs)), total: make([]float64, len(rs)), callers: map[string]float64{}}
					out[name] = s
				}
				s.self[i], s.total[i] = self[name], total[name]
				files[name] = fs[name]
				for c, us := range callers[name] {
					s.callers[c] += us / float64(len(rs))
				}
			}
		}
		return out
	}
	b, h := side(base), side(head)
	zero := func(n int) *series { return &series{self: make([]float64, n), total: make([]float64, n)} }
	var out []FunctionChange
	for name := range mergeKeys(b, h) {
		bs, hs := b[name], h[name]
		if bs == nil {
			bs = zero(len(base))
		}
		if hs == nil {
			hs = zero(len(head))
		}
		lo, hi := PairRange(bs.self, hs.self)
		if lo <= 0 && hi >= 0 {
			continue
		}
		fc := FunctionChange{Name: name, File: files[name], BaseSelf: stats.Median(bs.self), HeadSelf: stats.Median(hs.self),
			BaseTotal: stats.Median(bs.total), HeadTotal: stats.Median(hs.total), Lo: lo, Hi: hi}
		fc.Change = fc.HeadSelf - fc.BaseSelf
		if cpuChange != 0 {
			fc.Share = fc.Change / cpuChange
		}
		fc.Caller = topCaller(bs.callers, hs.callers, fc.Change)
		out = append(out, fc)
	}
	sort.Slice(out, func(i, j int) bool {
		if math.Abs(out[i].Change) != math.Abs(out[j].Change) {
			return math.Abs(out[i].Change) > math.Abs(out[j].Change)
		}
		return out[i].Name < out[j].Name
	})
	return out[:min(len(out), top)]
}

// topCaller is the caller whose share of a function's self time changed
// most in the direction of change (base and head: self by caller), "" when
// none changed that way.
func topCaller(base, head map[string]float64, change float64) string {
	best, most := "", 0.0
	for c := range mergeKeys(base, head) {
		d := head[c] - base[c]
		if d*change > 0 && (math.Abs(d) > most || math.Abs(d) == most && c < best) {
			best, most = c, math.Abs(d)
		}
	}
	return best
}

func mergeKeys[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// notCounter: a SHOW GLOBAL STATUS value or INNODB_METRICS counter that
// is not a count of the work done: a level (serverctl.Level) or a clock.
func notCounter(name string) bool {
	if strings.HasPrefix(name, WaitPrefix) {
		return true // a time waited (waits)
	}
	bare := strings.TrimPrefix(name, MetricPrefix)
	l := strings.ToLower(bare)
	return serverctl.Level(bare) || strings.HasSuffix(l, "_time") || strings.Contains(l, "_timestamp")
}

// statusPerTxn is each run's value of a status delta per transaction.
func statusPerTxn(rs []Run, name string) []float64 {
	return collect(rs, func(r Run) float64 { return float64(r.Status[name]) / float64(max(r.Events, 1)) })
}

// sameEveryWindow says whether counter name moved by the same nonzero
// count in every run's window of both sides: a count that does not follow
// the work done (perfbisect's own connections and readings of the status
// tables, a fixed number per window), which per transaction would only
// mirror the throughput's change.
func sameEveryWindow(base, head []Run, name string) bool {
	all := append(slices.Clone(base), head...)
	first := all[0].Status[name]
	if first == 0 {
		return false
	}
	for _, r := range all[1:] {
		if r.Status[name] != first {
			return false
		}
	}
	return true
}

func counters(base, head []Run, top int) []CounterChange {
	per := statusPerTxn
	names := map[string]bool{}
	for _, r := range append(slices.Clone(base), head...) {
		for k := range r.Status {
			names[k] = true
		}
	}
	var out []CounterChange
	for name := range names {
		if notCounter(name) {
			continue
		}
		bv, hv := per(base, name), per(head, name)
		if slices.ContainsFunc(bv, neg) || slices.ContainsFunc(hv, neg) {
			continue // fell during a run: a level this tool does not know, or a reset
		}
		if sameEveryWindow(base, head, name) {
			continue // the same count in every window whatever the throughput: the probe's own readings (Connections, Select_scan)
		}
		bm, hm := stats.Median(bv), stats.Median(hv)
		if math.Max(bm, hm) < 0.01 || bm == 0 && hm == 0 {
			continue // less than once in a hundred transactions on both sides
		}
		lo, hi := PairRange(bv, hv)
		if lo <= 0 && hi >= 0 {
			continue
		}
		c := CounterChange{Name: name, Base: bm, Head: hm}
		if bm > 0 {
			// A count falls by 100% at most.
			c.Change, c.Lo, c.Hi = hm/bm-1, math.Max(lo/bm, -1), hi/bm
		} else {
			c.New = true
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		ai, aj := magnitude(out[i]), magnitude(out[j])
		if ai != aj {
			return ai > aj
		}
		return out[i].Name < out[j].Name
	})
	return out[:min(len(out), top)]
}

func neg(v float64) bool { return v < 0 }

// magnitude orders counters' changes by size, a rise of x and a fall to
// 1/(1+x) alike, a counter new in the head first.
func magnitude(c CounterChange) float64 {
	if c.New {
		return math.Inf(1)
	}
	return math.Abs(math.Log1p(c.Change))
}

// serverSpecific are variables that differ between any two servers started
// apart: files, ports, the build's facts.
var serverSpecific = []string{"pid_file", "port", "socket", "datadir", "basedir", "log_error", "general_log_file", "slow_query_log_file",
	"hostname", "version", "version_comment", "version_compile_machine", "version_compile_os", "version_source_revision", "server_uuid",
	"server_uid", "tmpdir", "plugin_dir", "lc_messages_dir", "character_sets_dir", "innodb_data_home_dir", "innodb_log_group_home_dir", "log_bin_basename",
	"log_bin_index", "relay_log_basename", "relay_log_index", "secure_file_priv", "timestamp", "gtid_binlog_pos", "gtid_current_pos", "gtid_slave_pos",
	"version_malloc_library", "version_ssl_library", "bind_address", "report_port", "wsrep_node_address", "wsrep_node_name", "last_insert_id", "insert_id", "rand_seed1", "rand_seed2"}

// runFree is vars with the run's own directory (where its datadir is)
// written as "RUNDIR" in every value: paths of private files are not
// settings.
func runFree(vars map[string]string) map[string]string {
	dir := strings.TrimSuffix(vars["datadir"], "/")
	if dir == "" {
		return vars
	}
	dir = filepath.Dir(dir)
	out := make(map[string]string, len(vars))
	for k, v := range vars {
		out[k] = strings.ReplaceAll(v, dir, "RUNDIR")
	}
	return out
}

// oneSidedRows is how many variables only one server has are listed one
// by one; more (two flavors, two series) are summed up (OnlyBase,
// OnlyHead).
const oneSidedRows = 5

func settings(e *Explanation, base, head []Run) []SettingChange {
	if len(base) == 0 || len(head) == 0 {
		return nil
	}
	bv, hv := runFree(base[0].Variables), runFree(head[0].Variables)
	for name := range bv {
		if _, ok := hv[name]; !ok && !slices.Contains(serverSpecific, name) {
			e.OnlyBase = append(e.OnlyBase, name)
		}
	}
	for name := range hv {
		if _, ok := bv[name]; !ok && !slices.Contains(serverSpecific, name) {
			e.OnlyHead = append(e.OnlyHead, name)
		}
	}
	sort.Strings(e.OnlyBase)
	sort.Strings(e.OnlyHead)
	oneSided := len(e.OnlyBase)+len(e.OnlyHead) <= oneSidedRows
	if oneSided {
		e.OnlyBase, e.OnlyHead = nil, nil
	}
	var out []SettingChange
	for name := range mergeKeys(bv, hv) {
		if slices.Contains(serverSpecific, name) {
			continue
		}
		b, bok := bv[name]
		h, hok := hv[name]
		if b == h && bok == hok || (!bok || !hok) && !oneSided {
			continue
		}
		if !bok {
			b = NoValue
		}
		if !hok {
			h = NoValue
		}
		out = append(out, SettingChange{Name: name, Base: b, Head: h})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Frame is a node of the differential flame graph: a function on a call
// path from the root, with the CPU per transaction of every sample whose
// stack passes through this path on each side (microseconds, the mean over
// the runs), and its callees, larger first.
type Frame struct {
	Name     string   `json:"name"`
	Base     float64  `json:"base_us"`
	Head     float64  `json:"head_us"`
	Children []*Frame `json:"children,omitempty"`
}

// FlameGraph merges both sides' samples into one call tree, root first
// (the root is "all"), leaving out paths under minShare of the larger side's
// total: a graph a page can draw. Nil without profiles.
func FlameGraph(base, head []Run, minShare float64) *Frame {
	if !hasProfiles(base) || !hasProfiles(head) {
		return nil
	}
	root := &Frame{Name: "all"}
	index := map[*Frame]map[string]*Frame{}
	add := func(rs []Run, pick func(*Frame) *float64) {
		for _, r := range rs {
			per := 1e-3 / float64(max(r.Events, 1)) / float64(len(rs))
			for _, s := range r.Profile.Sample {
				v := float64(s.Value[1]) * per
				n := root
				*pick(n) += v
				for i := len(s.Location) - 1; i >= 0; i-- {
					name := s.Location[i].Line[0].Function.Name
					kids := index[n]
					if kids == nil {
						kids = map[string]*Frame{}
						index[n] = kids
					}
					c := kids[name]
					if c == nil {
						c = &Frame{Name: name}
						kids[name] = c
						n.Children = append(n.Children, c)
					}
					n = c
					*pick(n) += v
				}
			}
		}
	}
	add(base, func(f *Frame) *float64 { return &f.Base })
	add(head, func(f *Frame) *float64 { return &f.Head })
	cut := minShare * math.Max(root.Base, root.Head)
	var prune func(f *Frame)
	prune = func(f *Frame) {
		f.Children = slices.DeleteFunc(f.Children, func(c *Frame) bool { return math.Max(c.Base, c.Head) < cut })
		sort.Slice(f.Children, func(i, j int) bool {
			return math.Max(f.Children[i].Base, f.Children[i].Head) > math.Max(f.Children[j].Base, f.Children[j].Head)
		})
		for _, c := range f.Children {
			prune(c)
		}
	}
	prune(root)
	return root
}

// FileChange is a file the first bad commit changed, with the functions of
// the explanation defined in it and the sum of their change in self time
// per transaction (microseconds).
type FileChange struct {
	Path      string   `json:"path"`
	Functions []string `json:"functions"`
	Change    float64  `json:"self_change_us"`
}

// shortName is a profile's function name as a definition spells it:
// "dispatch_command" of "dispatch_command(enum_server_command, THD*)",
// "Json_writer::add_member" of "Json_writer::add_member(char const*)".
func shortName(name string) string {
	if i := strings.IndexByte(name, '('); i > 0 {
		name = name[:i]
	}
	if i := strings.LastIndexByte(name, ' '); i >= 0 {
		name = name[i+1:] // a return type some demanglers print
	}
	return name
}

// Files ties the functions of e to the files a commit changed (their
// content after it, by path): a file holds a function when it defines it
// (Class::method( anywhere, or a plain function's name at the start of a
// line followed by "("). Files are ordered by the size of their functions'
// change, larger first; those with none are left out.
func Files(e Explanation, contents map[string]string) []FileChange {
	var out []FileChange
	for path, text := range contents {
		fc := FileChange{Path: path}
		for _, f := range e.Functions {
			if defines(text, shortName(f.Name)) {
				fc.Functions = append(fc.Functions, f.Name)
				fc.Change += f.Change
			}
		}
		if len(fc.Functions) > 0 {
			out = append(out, fc)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if math.Abs(out[i].Change) != math.Abs(out[j].Change) {
			return math.Abs(out[i].Change) > math.Abs(out[j].Change)
		}
		return out[i].Path < out[j].Path
	})
	return out
}

// defines reports whether source text defines the function short
// (shortName's form).
func defines(text, short string) bool {
	if short == "" || strings.HasPrefix(short, "[") {
		return false
	}
	if strings.Contains(short, "::") {
		return strings.Contains(text, short+"(")
	}
	for rest := text; ; {
		i := strings.Index(rest, short+"(")
		if i < 0 {
			return false
		}
		// At the start of a line ("int\nfoo(") or after a type on its line
		// ("static int foo("), not a call inside a body (indented).
		line := rest[strings.LastIndexByte(rest[:i], '\n')+1 : i]
		if (i == 0 || !isIdent(rest[i-1])) && (line == "" || line[0] != ' ' && line[0] != '\t' && !strings.ContainsAny(line, "=;(")) {
			return true
		}
		rest = rest[i+len(short):]
	}
}

func isIdent(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}
