package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect/explain"
)

// ExplainDoc is the document of perfbisect explain: the explanation, the
// profiles' files, why the CPU was not profiled (when it was not), and the
// profiled runs' time.
type ExplainDoc struct {
	explain.Explanation
	BaseProfile string  `json:"base_profile,omitempty"`
	HeadProfile string  `json:"head_profile,omitempty"`
	NoPerf      string  `json:"no_perf,omitempty"`
	Seconds     float64 `json:"profiling_seconds"`
	Workload    string  `json:"workload"`
	// Files are the files the head's commit changed that define the
	// functions of the explanation (two revisions of one tree only).
	Files []explain.FileChange `json:"files,omitempty"`
	// Note says why there is no explanation, and how to get one (the
	// other fields are then empty).
	Note string `json:"note,omitempty"`
	// Pinned is the head measured again with the base's values of the
	// settings the servers differ in (explain of two sides under one
	// option file); nil when not measured.
	Pinned *PinnedDoc `json:"pinned,omitempty"`
}

// PinnedDoc is the head under its option file with the base's values of
// the settings the two servers run with differently pinned, measured with
// the base and the head as they are (runs of each, interleaved,
// unprofiled): its change of throughput against the base with the range of
// the pairwise differences (which covers it with Coverage), the head's
// change in the same runs, and how much of that fall the pinning takes
// away.
type PinnedDoc struct {
	Settings []string `json:"settings"`           // name=value, as pinned
	LeftOut  []string `json:"left_out,omitempty"` // settings that could not be pinned, and why
	// NotTaken are the pinned settings the head's server runs with at
	// another value all the same (an option on its command line wins
	// over the option file): then there is no Verdict.
	NotTaken   []string `json:"not_taken,omitempty"`
	OptionFile string   `json:"option_file,omitempty"`
	Runs       int      `json:"runs"`
	BaseTPS    float64  `json:"base_tps,omitempty"`
	PinnedTPS  float64  `json:"pinned_tps,omitempty"`
	HeadTPS    float64  `json:"head_tps,omitempty"`
	Change     float64  `json:"change"`                // the pinned head's, relative, of the medians
	HeadChange float64  `json:"head_change,omitempty"` // the head's as it is, in the same runs
	Lo         float64  `json:"change_lo"`
	Hi         float64  `json:"change_hi"`
	Coverage   float64  `json:"interval_coverage,omitempty"`
	Verdict    string   `json:"verdict"`         // PinnedAll, PinnedPart, PinnedNone or PinnedUndecided; "" when nothing was measured
	Error      string   `json:"error,omitempty"` // why the pinned measurement failed
}

// PinnedDoc verdicts: how much of the head's fall the base's settings take
// away.
const (
	PinnedAll  = "all"  // the settings carry the regression
	PinnedPart = "part" // some of it
	PinnedNone = "none" // not the settings
	// PinnedUndecided: the runs tell none of the above apart (too few or
	// too noisy, or the head is not slower in them).
	PinnedUndecided = "undecided"
)

// WriteExplain renders doc in format: text or markdown (the why, then the
// functions, counters and settings tables), or json; junit is refused.
func WriteExplain(w io.Writer, format string, doc ExplainDoc) error {
	switch format {
	case "junit":
		return fmt.Errorf("--format junit is for comparisons: an explanation renders as text, markdown or json")
	case "json":
		return writeIndented(w, doc)
	}
	md := format == "markdown"
	if md {
		fmt.Fprintf(w, "### perfbisect explain: %s\n\n", doc.Kind)
	}
	fmt.Fprintf(w, "base: %s\nhead: %s\nworkload: %s\n", doc.Base, doc.Head, doc.Workload)
	writeExplain(w, md, doc, 15)
	return nil
}

// WriteWhy writes the short explanation that follows an answer (a
// bisection's, a comparison's regression):
// the kind of change and the first five rows of each table.
// (md: in markdown).
func WriteWhy(w io.Writer, md bool, doc ExplainDoc) {
	fmt.Fprintln(w)
	if doc.Note != "" {
		fmt.Fprintf(w, "why: %s\n", doc.Note)
		return
	}
	writeExplain(w, md, doc, 5)
}

// writeExplain is the explanation's body, with at most top rows a table.
func writeExplain(w io.Writer, md bool, doc ExplainDoc, top int) {
	e := doc.Explanation
	fmt.Fprintf(w, "profiled runs: %d and %d, interleaved, %.0f s (they decide nothing); intervals below cover %.0f%%\n\n",
		e.BaseRuns, e.HeadRuns, doc.Seconds, 100*e.Coverage)
	fmt.Fprintln(w, why(e))
	if doc.NoPerf != "" {
		fmt.Fprintf(w, "no CPU profile: %s\n", doc.NoPerf)
	}
	if len(e.Functions) > 0 {
		fmt.Fprintf(w, "\nwhere the CPU per transaction changed (µs per transaction; self includes the library and helper functions it called: memcpy, malloc, String):\n\n")
		var rows [][]string
		for _, f := range e.Functions[:min(top, len(e.Functions))] {
			rows = append(rows, []string{f.Name, fileName(f.File), cut(f.Caller), fmt.Sprintf("%.1f", f.BaseSelf), fmt.Sprintf("%.1f", f.HeadSelf),
				fmt.Sprintf("%+.1f [%+.1f, %+.1f]", f.Change, f.Lo, f.Hi), share(f.Share), fmt.Sprintf("%.1f -> %.1f", f.BaseTotal, f.HeadTotal)})
		}
		table(w, md, []string{"function", "in", "mostly from", "base self", "head self", "change [interval]", "share of the CPU change", "inclusive"}, rows)
		for _, f := range e.Functions {
			if f.Name == "[unknown]" {
				fmt.Fprintf(w, "[unknown]: samples in %s without a symbol (a stripped binary): its debug symbols (Debian's -dbgsym packages) or a build with them name those functions\n", f.File)
				break
			}
		}
	}
	if len(doc.Files) > 0 {
		fmt.Fprintf(w, "\nthe changed files that define those functions:\n\n")
		var rows [][]string
		for _, f := range doc.Files[:min(top, len(doc.Files))] {
			rows = append(rows, []string{f.Path, fmt.Sprintf("%+.1f", f.Change), cut(strings.Join(f.Functions, ", "))})
		}
		table(w, md, []string{"file", "self change µs/txn", "functions"}, rows)
	}
	writeStatements(w, md, e.Statements, e.StatementsFromDigests, top)
	if len(e.Waits) > 0 {
		fmt.Fprintf(w, "\nwhere the server waited, per transaction (performance_schema's wait events; µs of a transaction):\n\n")
		var rows [][]string
		for _, x := range e.Waits[:min(top, len(e.Waits))] {
			rows = append(rows, []string{x.Name, fmt.Sprintf("%.1f", x.Base), fmt.Sprintf("%.1f", x.Head), fmt.Sprintf("%+.1f [%+.1f, %+.1f]", x.Change, x.Lo, x.Hi)})
		}
		table(w, md, []string{"wait event", "base µs/txn", "head µs/txn", "change [interval]"}, rows)
	}
	if len(e.Counters) == 0 {
		fmt.Fprintf(w, "\nno SHOW GLOBAL STATUS or INNODB_METRICS counter changed per transaction beyond the runs' spread (the same plans and I/O per transaction)\n")
	} else {
		fmt.Fprintf(w, "\ncounters that changed, per transaction (SHOW GLOBAL STATUS; INNODB_METRICS.name: information_schema.INNODB_METRICS):\n\n")
		var rows [][]string
		for _, c := range e.Counters[:min(top, len(e.Counters))] {
			rows = append(rows, []string{c.Name, perTxn(c.Base), perTxn(c.Head), relChange(c)})
		}
		table(w, md, []string{"counter", "base", "head", "change [interval]"}, rows)
	}
	if len(e.Settings) > 0 {
		fmt.Fprintf(w, "\nsettings the servers run with differently (SHOW GLOBAL VARIABLES):\n\n")
		var rows [][]string
		for _, s := range e.Settings[:min(top*3, len(e.Settings))] {
			rows = append(rows, []string{s.Name, cut(s.Base), cut(s.Head)})
		}
		table(w, md, []string{"variable", "base", "head"}, rows)
	} else {
		fmt.Fprintf(w, "\nthe servers run with the same values of the variables both have (SHOW GLOBAL VARIABLES, paths and ports aside)\n")
	}
	writePinned(w, doc.Pinned)
	for _, one := range []struct {
		side  string
		names []string
	}{{"base", e.OnlyBase}, {"head", e.OnlyHead}} {
		if len(one.names) > 0 {
			fmt.Fprintf(w, "%d variables only the %s has: %s\n", len(one.names), one.side, cut(strings.Join(one.names, ", ")))
		}
	}
	if doc.BaseProfile != "" {
		fmt.Fprintf(w, "\nprofiles (pprof): %s %s\n  pprof -top -diff_base %s %s\n", doc.BaseProfile, doc.HeadProfile, doc.BaseProfile, doc.HeadProfile)
	}
	fmt.Fprintf(w, "sources: %s\n", strings.Join(e.Sources, "; "))
}

// writePinned says what pinning the base's settings in the head did.
func writePinned(w io.Writer, p *PinnedDoc) {
	if p == nil {
		return
	}
	if p.Error != "" {
		fmt.Fprintf(w, "\nthe measurement of the head with the base's settings pinned failed: %s\n", p.Error)
		return
	}
	if len(p.LeftOut) > 0 {
		fmt.Fprintln(w)
	}
	for _, l := range p.LeftOut {
		fmt.Fprintf(w, "not pinned: %s\n", l)
	}
	if len(p.NotTaken) > 0 {
		fmt.Fprintf(w, "\nwith the base's %s pinned in its option file, the head's server still runs with another value (%s: an option on its command line, or compiled in as one, wins over the option file): whether the settings carry the regression is not measured\n",
			strings.Join(p.Settings, " "), strings.Join(p.NotTaken, "; "))
		return
	}
	if p.Verdict == "" {
		fmt.Fprintf(w, "no setting could be pinned to the base's value: the settings' part is not measured\n")
		return
	}
	says := map[string]string{
		PinnedAll:       "the settings carry the regression: with the base's values at most a quarter of the head's fall remains",
		PinnedPart:      "the settings carry part of the regression",
		PinnedNone:      "not the settings: with the base's values the head is as slow",
		PinnedUndecided: "these runs do not tell how much of the fall the settings carry (more runs would: perfbisect explain --runs N)",
	}[p.Verdict]
	fmt.Fprintf(w, "\nwith the base's %s pinned in its option file, the head measures %+.1f%% [%+.1f%%, %+.1f%%] against the base, %+.1f%% without them (%.0f and %.0f against %.0f tps; %d runs each, interleaved, not profiled; interval %.0f%%): %s\n",
		strings.Join(p.Settings, " "), 100*p.Change, 100*p.Lo, 100*p.Hi, 100*p.HeadChange, p.PinnedTPS, p.HeadTPS, p.BaseTPS, p.Runs, 100*p.Coverage, says)
}

// writeStatements writes the statements whose latency changed (at most
// top), then the plans of those whose plan differs.
func writeStatements(w io.Writer, md bool, sts []explain.StatementChange, digests bool, top int) {
	if len(sts) == 0 {
		return
	}
	clock := "the client's latency, round trip included"
	if digests {
		clock = "the server's time, performance_schema's statement digests"
	}
	fmt.Fprintf(w, "\nstatements whose latency changed (%s; time: µs of a transaction):\n\n", clock)
	var rows [][]string
	for _, s := range sts[:min(top, len(sts))] {
		plan := "same plan"
		switch {
		case s.PlanChanged:
			plan = "plan changed"
		case len(s.BasePlan) == 0 || len(s.HeadPlan) == 0:
			plan = ""
		}
		rows = append(rows, []string{cut(s.SQL), fmt.Sprintf("%.0f", s.BaseLatency), fmt.Sprintf("%.0f", s.HeadLatency),
			fmt.Sprintf("%+.1f%% [%+.1f%%, %+.1f%%]", 100*s.Change, 100*s.Lo, 100*s.Hi), perTxn(s.BasePerTxn) + " -> " + perTxn(s.HeadPerTxn),
			fmt.Sprintf("%.0f -> %.0f", s.BaseTime, s.HeadTime), share(s.Share), plan})
	}
	table(w, md, []string{"statement", "base µs", "head µs", "latency change [interval]", "per transaction", "time", "share of the change", "plan"}, rows)
	for _, s := range sts[:min(top, len(sts))] {
		if !s.PlanChanged {
			continue
		}
		fmt.Fprintf(w, "\nthe plan of %s changed (EXPLAIN of a sample on each server):\n\n", cut(s.SQL))
		var rows [][]string
		for _, side := range []struct {
			name string
			plan []bench.PlanRow
		}{{"base", s.BasePlan}, {"head", s.HeadPlan}} {
			for _, p := range side.plan {
				rows = append(rows, []string{side.name, p.ID, p.SelectType, p.Table, p.Type, p.Key, p.Rows, p.Extra})
			}
		}
		table(w, md, []string{"server", "id", "select_type", "table", "type", "key", "rows", "Extra"}, rows)
	}
}

// why is the explanation's first sentence: the kind of change and its
// sizes.
func why(e explain.Explanation) string {
	head := fmt.Sprintf("throughput %+.1f%%, server CPU per transaction %+.1f%%", 100*e.TPSChange, 100*e.CPUChange)
	switch e.Kind {
	case explain.KindCPU:
		if e.TPSChange >= 0 {
			return fmt.Sprintf("why: CPU. The head spends more server CPU per transaction (%s; the profiled runs' throughput does not show it: perf and the client share the CPUs, and the verdict's runs measured the throughput).", head)
		}
		if e.CPUShare >= 1 {
			return fmt.Sprintf("why: CPU. The head spends more server CPU per transaction (%s): that alone accounts for the throughput's fall.", head)
		}
		return fmt.Sprintf("why: CPU. The head spends more server CPU per transaction (%s): that accounts for %.0f%% of the throughput's fall.", head, 100*e.CPUShare)
	case explain.KindWaiting:
		return fmt.Sprintf("why: waiting. The head's server CPU per transaction accounts for %.0f%% of the throughput's fall (%s): the rest is time the server waits (I/O, locks, a stall); see the counters.", 100*math.Max(e.CPUShare, 0), head)
	}
	return fmt.Sprintf("no slowdown to explain in the profiled runs (%s).", head)
}

func share(s float64) string {
	if s == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f%%", 100*s)
}

func fileName(f string) string {
	if i := strings.LastIndexByte(f, '/'); i >= 0 {
		return f[i+1:]
	}
	return f
}

func perTxn(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.4f", v)
}

func relChange(c explain.CounterChange) string {
	if c.New {
		return "new in the head"
	}
	return fmt.Sprintf("%+.1f%% [%+.1f%%, %+.1f%%]", 100*c.Change, 100*c.Lo, 100*c.Hi)
}

func cut(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
