package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/stats"
)

func compareDoc(t *testing.T, result string) CompareDoc {
	t.Helper()
	var base, head []bisect.Run
	for i, v := range []float64{100, 102, 99, 101, 100, 103, 98, 100} {
		base = append(base, bisect.Run{TPS: v, QPS: 18 * v, CPUPerTxn: time.Duration(1e6 / v), LatencyP95: time.Duration(1e7 / v)})
		w := v * 0.8
		if i == 3 {
			w = 0 // a run without transactions: not in the numbers
		}
		head = append(head, bisect.Run{TPS: w, QPS: 18 * w, CPUPerTxn: time.Duration(1e6 / v * 1.25), LatencyP95: time.Duration(1e7 / v * 1.25)})
	}
	cmp := stats.Compare(usable(base, session.TPS), usable(head, session.TPS), 0.05, 0.05)
	return CompareDoc{Result: result, Base: strings.Repeat("a", 40), Head: strings.Repeat("b", 40), BaseSubject: "base | subject",
		HeadSubject: "head", Metric: "tps", Threshold: 0.05, Confidence: 0.95, Verdict: cmp.Verdict.String(), Why: "because",
		Workload: "oltp_read_only, 2 threads, point-selects=1, run by sysbench",
		Rows:     CompareRows(base, head, session.TPS, cmp), BaseRuns: base, HeadRuns: head}
}

func TestCompareRowsAndFormats(t *testing.T) {
	doc := compareDoc(t, CompareRegression)
	// tps (deciding), qps, p95, cpu-per-txn; p99 was not measured (all zero).
	if len(doc.Rows) != 4 || !doc.Rows[0].Decides || doc.Rows[0].Metric != "tps" || doc.Rows[2].Metric != "p95" {
		t.Fatalf("rows: %+v", doc.Rows)
	}
	if r := doc.Rows[0].Compare; r.NNew != 7 || r.Shift.Est > -0.15 {
		t.Errorf("tps row: n %d, shift %v (the no-transaction run must be left out)", r.NNew, r.Shift.Est)
	}
	if r := doc.Rows[2].Compare; r.Shift.Est < 0.15 {
		t.Errorf("p95 rises by 25%%, row says %v", r.Shift.Est)
	}
	var md bytes.Buffer
	if err := WriteCompare(&md, "markdown", doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| **tps** |") || !strings.Contains(md.String(), `base \| subject`) || !strings.Contains(md.String(), "REGRESSION") ||
		!strings.Contains(md.String(), "Workload: oltp_read_only, 2 threads, point-selects=1, run by sysbench") {
		t.Errorf("markdown:\n%s", md.String())
	}
	var txt bytes.Buffer
	_ = WriteCompare(&txt, "text", doc)
	if !strings.Contains(txt.String(), "tps *") || !strings.Contains(txt.String(), "REGRESSION") ||
		!strings.Contains(txt.String(), "workload oltp_read_only, 2 threads") {
		t.Errorf("text:\n%s", txt.String())
	}
	var js bytes.Buffer
	_ = WriteCompare(&js, "json", doc)
	var back CompareDoc
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Result != CompareRegression || len(back.Rows) != 4 || len(back.HeadRuns) != 8 {
		t.Errorf("json: %v %+v", err, back.Result)
	}
	for _, c := range []struct {
		result                    string
		failures, skipped, errors int
		level                     string
	}{{CompareRegression, 1, 0, 0, "::error"}, {CompareInconclusive, 0, 1, 0, "::warning"}, {CompareNoRegression, 0, 0, 0, "::notice"}, {CompareError, 0, 0, 1, "::error"}} {
		d := compareDoc(t, c.result)
		var x bytes.Buffer
		if err := WriteCompare(&x, "junit", d); err != nil {
			t.Fatal(err)
		}
		var s junitSuites
		if err := xml.Unmarshal(x.Bytes(), &s); err != nil {
			t.Fatalf("%s: %v", c.result, err)
		}
		if got := s.Suites[0]; got.Failures != c.failures || got.Skipped != c.skipped || got.Errors != c.errors || got.Tests != 4 {
			t.Errorf("%s: junit %+v", c.result, got)
		}
		if a := GitHubAnnotation(d); !strings.HasPrefix(a, c.level+" title=perfbisect compare::") || strings.Contains(a, "\n") {
			t.Errorf("%s: annotation %q", c.result, a)
		}
	}
	if err := WriteCompare(&md, "html", doc); err == nil {
		t.Error("unknown format: no error")
	}
}

// TestCompareMedianHeader: the medians' column says [CI] only when some
// median has an interval (8 runs a side have one; 3 do not).
func TestCompareMedianHeader(t *testing.T) {
	header := func(doc CompareDoc) string {
		var b bytes.Buffer
		_ = WriteCompare(&b, "text", doc)
		for _, l := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(l, "metric") {
				return l
			}
		}
		return ""
	}
	if h := header(compareDoc(t, CompareRegression)); !strings.Contains(h, "base median [CI]") {
		t.Errorf("8 runs a side: header %q", h)
	}
	var base, head []bisect.Run
	for _, v := range []float64{100, 102, 99} {
		base = append(base, bisect.Run{TPS: v})
		head = append(head, bisect.Run{TPS: 0.8 * v})
	}
	cmp := stats.Compare(usable(base, session.TPS), usable(head, session.TPS), 0.05, 0.05)
	few := CompareDoc{Result: CompareInconclusive, Metric: "tps", Rows: CompareRows(base, head, session.TPS, cmp)}
	if h := header(few); strings.Contains(h, "median [CI]") || !strings.Contains(h, "base median") {
		t.Errorf("3 runs a side: header %q, want medians without [CI]", h)
	}
}

func TestCompareSetPerThreadCount(t *testing.T) {
	a, b := compareDoc(t, CompareNoRegression), compareDoc(t, CompareRegression)
	a.Threads, b.Threads = 1, 8
	var md bytes.Buffer
	if err := WriteCompareSet(&md, "markdown", []CompareDoc{a, b}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| 1 | ") || !strings.Contains(md.String(), "| 8 | ") || !strings.Contains(md.String(), "| regression |") ||
		strings.Count(md.String(), "### perfbisect compare") != 2 {
		t.Errorf("markdown:\n%s", md.String())
	}
	var x bytes.Buffer
	_ = WriteCompareSet(&x, "junit", []CompareDoc{a, b})
	var s junitSuites
	if err := xml.Unmarshal(x.Bytes(), &s); err != nil || len(s.Suites) != 2 || s.Suites[1].Failures != 1 || !strings.HasSuffix(s.Suites[1].Name, "threads=8") {
		t.Errorf("junit: %v %+v", err, s)
	}
	var js bytes.Buffer
	_ = WriteCompareSet(&js, "json", []CompareDoc{a, b})
	var back []CompareDoc
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back) != 2 || back[1].Threads != 8 {
		t.Errorf("json: %v", err)
	}
}

// TestCompareWithNothingMeasured: a comparison that stopped before any run
// (a build failed) prints its error, not an empty table.
func TestCompareWithNothingMeasured(t *testing.T) {
	doc := CompareDoc{Result: CompareError, Error: "BASE cannot be measured: build failed", Metric: "tps"}
	for _, f := range []string{"text", "markdown"} {
		var b bytes.Buffer
		if err := WriteCompare(&b, f, doc); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "metric") || !strings.Contains(b.String(), "build failed") {
			t.Errorf("%s of a comparison with no runs:\n%s", f, b.String())
		}
	}
}

// TestCompareSetSides: several sides at two thread counts are one table, a
// row per thread count and a column per side (the base's median, each
// side's median and change, its result when not "no regression"); each
// comparison follows in full, its sides named with their server and option
// file, a side that is more than a revision by what the user wrote.
func TestCompareSetSides(t *testing.T) {
	var docs []CompareDoc
	for _, n := range []int{1, 4} {
		a, b := compareDoc(t, CompareRegression), compareDoc(t, CompareNoRegression)
		a.Threads, b.Threads = n, n
		b.Head = "side-0123456789abcdef"
		side := &SideDoc{Arg: "/usr", What: "installed MariaDB 10.11.6", Server: "/usr/sbin/mariadbd", Version: "mariadbd  Ver 10.11.6", OptionFile: "/etc/big.cnf"}
		a.BaseSide = &SideDoc{Arg: "good", What: "aaaaaaaaaa", Server: "/b/bin/mariadbd", Version: "v", OptionFile: "/etc/big.cnf"}
		b.BaseSide, b.HeadSide = a.BaseSide, side
		docs = append(docs, a, b)
	}
	var txt bytes.Buffer
	if err := WriteCompareSet(&txt, "text", docs); err != nil {
		t.Fatal(err)
	}
	out := txt.String()
	lines := strings.Split(out, "\n")
	if !strings.HasPrefix(lines[0], "threads") || !strings.Contains(lines[0], "base aaaaaaaaaa") || !strings.Contains(lines[0], "bbbbbbbbbb") || !strings.Contains(lines[0], "/usr") {
		t.Errorf("header: %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "1 ") || !strings.Contains(lines[1], "REGRESSION") || !strings.HasPrefix(lines[2], "4 ") || strings.Count(lines[2], "%") < 2 {
		t.Errorf("rows:\n%s\n%s", lines[1], lines[2])
	}
	if !strings.Contains(out, "threads=4, /usr [big.cnf] against aaaaaaaaaa") || !strings.Contains(out, "head: installed MariaDB 10.11.6; server /usr/sbin/mariadbd (mariadbd  Ver 10.11.6); option file /etc/big.cnf") {
		t.Errorf("the comparisons in full do not name the side:\n%s", out)
	}
	var md bytes.Buffer
	_ = WriteCompareSet(&md, "markdown", docs)
	if !strings.Contains(md.String(), "| threads | base aaaaaaaaaa | bbbbbbbbbb | /usr [big.cnf] |") {
		t.Errorf("markdown:\n%s", md.String())
	}
}

// A comparison whose samples differ in shape but not in location warns, in
// text and in markdown, under the verdict.
func TestCompareShowsTheDecisionsWarnings(t *testing.T) {
	var base, head []bisect.Run
	for i := 0; i < 20; i++ {
		base = append(base, bisect.Run{TPS: 100 + float64(i%5)*0.2})
		v := 70.0 // half the head's runs far below, half far above: bimodal
		if i%2 == 1 {
			v = 130
		}
		head = append(head, bisect.Run{TPS: v + float64(i%3)*0.1})
	}
	cmp := stats.Compare(usable(base, session.TPS), usable(head, session.TPS), 0.05, 0.05)
	if len(cmp.Warnings) == 0 {
		t.Fatalf("no warning from stats.Compare for a bimodal head (KS p %.3g, MW p %.3g): the case does not test anything", cmp.KSP, cmp.P)
	}
	doc := CompareDoc{Result: CompareInconclusive, Metric: "tps", Rows: CompareRows(base, head, session.TPS, cmp)}
	for format, want := range map[string]string{"text": "warning: tps: the two samples differ in shape", "markdown": "> **Warning**: tps: the two samples differ in shape"} {
		var b bytes.Buffer
		if err := WriteCompare(&b, format, doc); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s: no %q in\n%s", format, want, b.String())
		}
	}
}
