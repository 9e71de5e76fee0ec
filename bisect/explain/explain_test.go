package explain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// perf script's output as perf 6.1 prints it for -F comm,tid,period,ip,sym,dso
// with call graphs: C++ names with spaces, an unresolved frame, a kernel
// frame.
const script = `mariadbd 4242  2004008 
	    55d0a1b2c3d4 Json_writer::add_member(char const*, unsigned long) (/usr/sbin/mariadbd)
	    55d0a1b2c000 Opt_trace_context::start(THD*, TABLE_LIST*) (/usr/sbin/mariadbd)
	    55d0a1b20000 dispatch_command(enum_server_command, THD*, char*, unsigned int, bool) (/usr/sbin/mariadbd)
	               0 [unknown] ([unknown])

mariadbd 4243  2004008 
	    7f0011223344 __memmove_avx_unaligned_erms (/usr/lib/x86_64-linux-gnu/libc.so.6)
	    55d0a1b2c3d4 Json_writer::add_member(char const*, unsigned long) (/usr/sbin/mariadbd)
	    55d0a1b20000 dispatch_command(enum_server_command, THD*, char*, unsigned int, bool) (/usr/sbin/mariadbd)

mariadbd 4243  2004008 
	ffffffff81000000 [unknown] ([kernel.kallsyms])

`

func TestParseScript(t *testing.T) {
	p, err := ParseScript(strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sample) != 3 || p.Period != 2004008 {
		t.Fatalf("%d samples, period %d: want 3 of 2004008 ns", len(p.Sample), p.Period)
	}
	leaf := p.Sample[1].Location[0].Line[0].Function
	if leaf.Name != "__memmove_avx_unaligned_erms" || leaf.Filename != "/usr/lib/x86_64-linux-gnu/libc.so.6" {
		t.Errorf("leaf of sample 2: %q in %q", leaf.Name, leaf.Filename)
	}
	if f := p.Sample[0].Location[2].Line[0].Function.Name; f != "dispatch_command(enum_server_command, THD*, char*, unsigned int, bool)" {
		t.Errorf("a name with spaces and parentheses: %q", f)
	}
	// The same function in two samples is one Function and one Location.
	if p.Sample[0].Location[0] != p.Sample[1].Location[1] {
		t.Error("Json_writer::add_member is two locations")
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := profile.Parse(&buf)
	if err != nil || len(back.Sample) != 3 {
		t.Fatalf("pprof's reader: %v, %d samples", err, len(back.Sample))
	}
}

// run makes a profiled run whose samples are stacks (leaf first, "lib:"
// marks a library frame) with the given counts, for events transactions.
func run(events int64, tps, cpu float64, status map[string]int64, stacks map[string]int) Run {
	var b strings.Builder
	for stack, n := range stacks {
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "mariadbd 1 1000000\n")
			for _, f := range strings.Split(stack, ";") {
				dso := "/usr/sbin/mariadbd"
				if name, ok := strings.CutPrefix(f, "lib:"); ok {
					f, dso = name, "/usr/lib/libc.so.6"
				}
				fmt.Fprintf(&b, "\t1234 %s (%s)\n", f, dso)
			}
			b.WriteString("\n")
		}
	}
	p, err := ParseScript(strings.NewReader(b.String()))
	if err != nil {
		panic(err)
	}
	return Run{Profile: p, Events: events, TPS: tps, CPUPerTxn: cpu, Status: status, Variables: map[string]string{"port": fmt.Sprint(tps),
		"datadir": fmt.Sprintf("/state/runs/r%v/data/", tps), "aria_log_dir_path": fmt.Sprintf("/state/runs/r%v/data/", tps)}}
}

// A count that is the same in every window whatever the throughput
// (perfbisect's own connections and readings) is not a counter that
// changed, though per transaction it follows the throughput; the work's
// own counters are.
func TestProbeCountsAreLeftOut(t *testing.T) {
	var base, head []Run
	for i := range 3 {
		base = append(base, run(1000, 200, 500, map[string]int64{"Connections": 3, "Select_scan": 2, "Handler_read_next": 100000 + int64(i)*500}, nil))
		head = append(head, run(200, 40, 520, map[string]int64{"Connections": 3, "Select_scan": 2, "Handler_read_next": 20000 + int64(i)*100}, nil))
	}
	e := Explain("good", "bad", base, head, Options{})
	for _, c := range e.Counters {
		if c.Name == "Connections" || c.Name == "Select_scan" {
			t.Errorf("counter %s %+v listed: the same count in every window is the probe's", c.Name, c)
		}
	}
	base[1].Status["Select_scan"] = 3 // one window's differs: the work's, listed
	e = Explain("good", "bad", base, head, Options{})
	if !slices.ContainsFunc(e.Counters, func(c CounterChange) bool { return c.Name == "Select_scan" }) {
		t.Errorf("counters %+v: want Select_scan, which did not stay the same", e.Counters)
	}
}

// A sleep that grew is listed with the caller its growth came through
// (threads waiting for a free page), not the one whose sleeps stayed the
// same (a background thread's).
func TestFunctionCaller(t *testing.T) {
	base := []Run{
		run(1000, 100, 500, nil, map[string]int{"work;main": 480, "sleep;idle;bg": 20, "sleep;get_free;main": 5}),
		run(1000, 101, 505, nil, map[string]int{"work;main": 482, "sleep;idle;bg": 21, "sleep;get_free;main": 4}),
		run(1000, 99, 502, nil, map[string]int{"work;main": 479, "sleep;idle;bg": 19, "sleep;get_free;main": 6}),
	}
	head := []Run{
		run(1000, 30, 560, nil, map[string]int{"work;main": 481, "sleep;idle;bg": 20, "sleep;get_free;main": 60}),
		run(1000, 31, 565, nil, map[string]int{"work;main": 480, "sleep;idle;bg": 22, "sleep;get_free;main": 63}),
		run(1000, 29, 562, nil, map[string]int{"work;main": 482, "sleep;idle;bg": 19, "sleep;get_free;main": 61}),
	}
	e := Explain("good", "bad", base, head, Options{})
	if len(e.Functions) == 0 || e.Functions[0].Name != "sleep" || e.Functions[0].Caller != "get_free" {
		t.Fatalf("functions %+v: want sleep first, mostly from get_free", e.Functions)
	}
}

// The head's extra CPU is in one function, partly through memcpy it calls:
// that function is first, its library time counted as its own; a function
// whose time did not change is not listed; a counter that rose in every
// run is, one that did not is not.
func TestExplainCPU(t *testing.T) {
	base := []Run{
		run(1000, 100, 500, map[string]int64{"Handler_read_next": 1000, "Questions": 10000}, map[string]int{"work;main": 500}),
		run(1000, 104, 510, map[string]int64{"Handler_read_next": 1010, "Questions": 10100}, map[string]int{"work;main": 510}),
		run(1000, 98, 505, map[string]int64{"Handler_read_next": 990, "Questions": 9900}, map[string]int{"work;main": 505}),
	}
	head := []Run{
		run(1000, 80, 625, map[string]int64{"Handler_read_next": 3000, "Questions": 10050}, map[string]int{"work;main": 500, "trace;main": 40, "String::append;trace;main": 20, "lib:memcpy;trace;main": 65}),
		run(1000, 82, 620, map[string]int64{"Handler_read_next": 3100, "Questions": 9950}, map[string]int{"work;main": 505, "trace;main": 55, "lib:memcpy;trace;main": 60}),
		run(1000, 79, 630, map[string]int64{"Handler_read_next": 2900, "Questions": 10000}, map[string]int{"work;main": 508, "trace;main": 62, "lib:memcpy;trace;main": 60}),
	}
	e := Explain("good", "bad", base, head, Options{})
	if e.Kind != KindCPU || e.CPUShare < 0.9 {
		t.Errorf("kind %s, CPU share %.2f: want CPU, most of it", e.Kind, e.CPUShare)
	}
	if math.Abs(e.Coverage-0.9) > 1e-9 {
		t.Errorf("coverage of 3 against 3 runs %.4f: want 0.9 (1 - 2/20)", e.Coverage)
	}
	if len(e.Functions) == 0 || e.Functions[0].Name != "trace" {
		t.Fatalf("functions %+v: want trace first", e.Functions)
	}
	f := e.Functions[0]
	if f.HeadSelf < 120 || f.BaseSelf != 0 || f.Lo <= 0 {
		t.Errorf("trace: %+v: want its memcpy in its self time (about 125 µs per transaction) and an interval above 0", f)
	}
	for _, g := range e.Functions {
		if g.Name == "work" || g.Name == "memcpy" || g.Name == "String::append" {
			t.Errorf("listed %s: %+v", g.Name, g)
		}
	}
	if len(e.Counters) != 1 || e.Counters[0].Name != "Handler_read_next" || e.Counters[0].Change < 1.8 {
		t.Errorf("counters %+v: want Handler_read_next alone, about +200%%", e.Counters)
	}
	// The flame graph: all -> main -> trace (head only) and work.
	if e.Flame == nil || len(e.Flame.Children) != 1 || e.Flame.Children[0].Name != "main" {
		t.Fatalf("flame graph %+v: want all -> main", e.Flame)
	}
	var trace *Frame
	for _, c := range e.Flame.Children[0].Children {
		if c.Name == "trace" {
			trace = c
		}
	}
	if trace == nil || trace.Base != 0 || trace.Head < 120 || trace.Head > 130 || math.Abs(e.Flame.Head-625) > 5 {
		t.Errorf("flame graph: trace %+v, all %.1f µs: want trace in the head only, about 125 of 625 µs per transaction", trace, e.Flame.Head)
	}
	if len(e.Settings) != 0 {
		t.Errorf("settings %+v: the port and the run's own directories differ between any two servers", e.Settings)
	}
}

// Less throughput at the same CPU per transaction is waiting.
func TestExplainWaiting(t *testing.T) {
	var base, head []Run
	for i := 0; i < 3; i++ {
		// The pool's data pages are a level (it fills in the base, is full
		// in the head), and Handler_commit fell in one run (a FLUSH
		// STATUS): neither is work.
		base = append(base, run(1000, 380+float64(i), 3174, map[string]int64{"Innodb_buffer_pool_reads": 10, "Innodb_buffer_pool_pages_data": 900,
			"INNODB_METRICS.buffer_pool_pages_data": 900, "Handler_commit": []int64{1000, -50, 1000}[i]}, map[string]int{"a": 100}))
		head = append(head, run(1000, 76+float64(i), 3400, map[string]int64{"Innodb_buffer_pool_reads": 9000 + int64(i), "Innodb_buffer_pool_wait_free": 500,
			"Innodb_buffer_pool_pages_data": 0, "INNODB_METRICS.buffer_pool_pages_data": 0, "Handler_commit": 9000}, map[string]int{"a": 100}))
		head[i].Variables["innodb_lru_flush_size"] = "32"
	}
	e := Explain("10.0.23", "10.0.24", base, head, Options{})
	if e.Kind != KindWaiting || e.CPUShare > 0.1 {
		t.Errorf("kind %s, CPU share %.2f: want waiting", e.Kind, e.CPUShare)
	}
	if len(e.Counters) != 2 || e.Counters[0].Name != "Innodb_buffer_pool_wait_free" || !e.Counters[0].New || e.Counters[1].Name != "Innodb_buffer_pool_reads" {
		t.Errorf("counters %+v: want the waits new in the head, then the reads", e.Counters)
	}
	if _, err := json.Marshal(e); err != nil {
		t.Errorf("JSON: %v", err)
	}
	if len(e.Settings) != 1 || e.Settings[0] != (SettingChange{Name: "innodb_lru_flush_size", Base: NoValue, Head: "32"}) || e.OnlyHead != nil {
		t.Errorf("settings %+v, only the head's %q: want the new variable as a row", e.Settings, e.OnlyHead)
	}
	// Two flavors: the variables only one has are summed up.
	for i := range head {
		for _, v := range []string{"aria_block_size", "aria_recover", "aria_log_file_size", "aria_page_checksum", "aria_group_commit", "aria_pagecache_age_threshold"} {
			base[i].Variables[v] = "1"
		}
		head[i].Variables["innodb_lru_flush_size"] = "32"
		base[i].Variables["innodb_lru_flush_size"] = "64"
	}
	e = Explain("10.0.23", "10.0.24", base, head, Options{})
	if len(e.Settings) != 1 || e.Settings[0].Base != "64" || len(e.OnlyBase) != 6 || e.OnlyHead != nil {
		t.Errorf("settings %+v, only the base's %q: want the one both have and differ in, 6 of the base's alone", e.Settings, e.OnlyBase)
	}
}

// A changed file holds the functions it defines, not those it calls.
func TestFiles(t *testing.T) {
	e := Explanation{Functions: []FunctionChange{
		{Name: "dispatch_command(enum_server_command, THD*, char*, unsigned int, bool)", Change: 40},
		{Name: "Json_writer::add_member(char const*)", Change: 20},
		{Name: "my_qsort2", Change: -5},
	}}
	files := Files(e, map[string]string{
		"sql/sql_parse.cc":      "bool dispatch_command(enum enum_server_command command, THD *thd)\n{\n  my_qsort2(a, b);\n}\n",
		"sql/my_json_writer.cc": "void Json_writer::add_member(const char *name)\n{\n}\n",
		"mysys/mf_qsort.c":      "static int\nmy_qsort2(void *base)\n{\n}\n",
		"sql/sql_class.cc":      "int x= dispatch_command(COM_QUERY, thd);\n",
		"README":                "nothing",
	})
	var got []string
	for _, f := range files {
		got = append(got, fmt.Sprintf("%s %v %.0f", f.Path, f.Functions, f.Change))
	}
	want := []string{"sql/sql_parse.cc [dispatch_command(enum_server_command, THD*, char*, unsigned int, bool)] 40",
		"sql/my_json_writer.cc [Json_writer::add_member(char const*)] 20", "mysys/mf_qsort.c [my_qsort2] -5"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Profiles written for pprof are CPU per transaction, the side's runs'
// mean: two sides of different throughput diff as the explanation does.
func TestPerTransaction(t *testing.T) {
	r := run(1000, 0, 0, nil, map[string]int{"a;main": 3, "b;main": 1})
	p, err := PerTransaction(r.Profile, r.Events, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, s := range p.Sample {
		got[s.Location[0].Line[0].Function.Name] += s.Value[0]
	}
	// 3 samples of 1 ms over 1000 transactions and 2 runs: 1500 ns.
	if len(p.SampleType) != 1 || p.SampleType[0].Type != "cpu_per_txn" || got["a"] != 1500 || got["b"] != 500 {
		t.Errorf("sample types %v, values %v: want cpu_per_txn, a 1500 and b 500 ns", p.SampleType, got)
	}
}

// Throughput that did not fall beyond the runs' spread is no slowdown,
// whatever the medians say; a counter's fall is never beyond -100%.
func TestExplainNoise(t *testing.T) {
	var base, head []Run
	for i, tps := range []float64{100, 96, 103} {
		base = append(base, run(1000, tps, 500, map[string]int64{"Innodb_os_log_written": []int64{40, 60, 50}[i]}, map[string]int{"a": 100}))
		head = append(head, run(1000, []float64{99, 97, 101}[i], 505, map[string]int64{"Innodb_os_log_written": 0}, map[string]int{"a": 100}))
	}
	e := Explain("a", "b", base, head, Options{})
	if e.Kind != KindNone || e.CPUShare != 0 {
		t.Errorf("kind %s, CPU share %.2f: want none (the runs overlap)", e.Kind, e.CPUShare)
	}
	for _, c := range e.Counters {
		if c.Lo < -1 {
			t.Errorf("%s: interval [%+.0f%%, %+.0f%%] below -100%%", c.Name, 100*c.Lo, 100*c.Hi)
		}
	}
	if len(e.Counters) != 1 {
		t.Errorf("counters %+v: want the log writes' fall", e.Counters)
	}
}
