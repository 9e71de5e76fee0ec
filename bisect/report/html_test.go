package report_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/explain"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/scan"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/simmeasure"
	"github.com/perfbisect/perfbisect/internal/browsertest"
	"github.com/perfbisect/perfbisect/stats"
)

// simulated runs a real session (search and decisions) over 30 simulated
// commits with a 20% regression at commit 19 and commit 11 that does not
// build, and returns its document.
func simulated(t *testing.T) (report.Document, []string) {
	cs, hs := simmeasure.Chain(30)
	m := &simmeasure.Measurer{Commits: cs, Base: 500, Culprits: map[string]float64{hs[19]: 0.8}, CV: 0.03,
		Untestable: map[string]string{hs[11]: "build failed"}, Rand: rand.New(rand.NewPCG(5, 7))}
	cfg := session.Config{Good: hs[0], Bad: hs[30], Commits: cs, Repeats: 5, MaxRepeats: 15,
		Threshold: 0.05, Confidence: 0.95, Metric: session.TPS, Search: session.SearchClassic}
	s, err := session.New(cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background())
	if err != nil || res.FirstBad != hs[19] {
		t.Fatalf("simulated session: %v, first bad %q", err, res.FirstBad)
	}
	d := report.NewDocument(res, session.TPS, func(h string) string { return "subject <b>" + h[36:] + "</b>" })
	d.Place(hs[0], hs[30], cs)
	return d, hs
}

// render writes p with report.WriteHTML to a file name in a temporary
// directory and returns its path.
func render(t *testing.T, name string, p report.Page) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := report.WriteHTML(f, p); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPlaceGivesGenerations(t *testing.T) {
	d, hs := simulated(t)
	if d.Commits != 30 || d.Good != hs[0] || d.Bad != hs[30] {
		t.Fatalf("commits %d good %s bad %s", d.Commits, d.Good, d.Bad)
	}
	for _, tc := range d.Tested {
		want := -1
		for i, h := range hs {
			if h == tc.Commit {
				want = i
			}
		}
		if tc.Position == nil || *tc.Position != want {
			t.Errorf("%.10s: position %v, want %d", tc.Commit, tc.Position, want)
		}
	}
	// A merge: its generation is one more than its longest parent line.
	cs := []bisect.Commit{{Hash: "m", Parents: []string{"a2", "b1"}}, {Hash: "a2", Parents: []string{"a1"}},
		{Hash: "a1", Parents: []string{"g"}}, {Hash: "b1", Parents: []string{"g"}}}
	md := report.Document{Tested: []report.TestedCommit{{Commit: "m"}, {Commit: "b1"}, {Commit: "g"}, {Commit: "x"}}}
	md.Place("g", "m", cs)
	got := []any{}
	for _, tc := range md.Tested {
		if tc.Position == nil {
			got = append(got, nil)
		} else {
			got = append(got, *tc.Position)
		}
	}
	if md.Commits != 3 || got[0] != 3 || got[1] != 1 || got[2] != 0 || got[3] != nil {
		t.Errorf("merge: commits %d positions %v, want 3 [3 1 0 <nil>]", md.Commits, got)
	}
}

// TestHTMLReportRendersInChromium renders a simulated bisection and checks in
// headless Chromium that every chart was drawn: one strip chart per tested
// commit with one element per stored run, all inside the chart area, the
// bisect path with a point per commit that has a median, the timeline, no
// console error; the user's text is escaped.
func TestHTMLReportRendersInChromium(t *testing.T) {
	d, hs := simulated(t)
	page := report.Page{Title: "perfbisect: bisection", Command: "start --good v1 --bad v2", Bisect: &d,
		Options: []report.OptionsText{{Commit: hs[19], Text: "[mysqld]\ninnodb_buffer_pool_size=16M\n</pre><script>alert(1)</script>"}},
		Builds:  []report.BuildFact{{Commit: hs[11], Seconds: 3.5, Error: "error: expected ';' <here>"}, {Commit: hs[19], Seconds: 1, Flavor: "mariadb", Version: "10.11.6", Prefix: "/cache/x"}}}
	path := render(t, "bisect.html", page)
	raw, _ := os.ReadFile(path)
	html := string(raw)
	for _, want := range []string{hs[19], "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;", "subject &lt;b&gt;", "expected &#39;;&#39; &lt;here&gt;",
		"change vs good in its blocks", "good runs)"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(html, "<script>alert(1)") || strings.Contains(html, "src=\"http") {
		t.Errorf("page has unescaped user text or an external script")
	}

	got := browsertest.Load(t, path, "bisect.png")
	if len(got.Errors) > 0 {
		t.Errorf("console errors: %q", got.Errors)
	}
	if got.Title != page.Title {
		t.Errorf("title %q", got.Title)
	}
	byCommit := map[string]browsertest.Canvas{}
	kinds := map[string]int{}
	for _, c := range got.Canvases {
		kinds[c.Kind]++
		if !c.Chart || c.Painted == 0 {
			t.Errorf("canvas %s (%s): chart %v, %d painted pixels", c.ID, c.Kind, c.Chart, c.Painted)
		}
		if c.Kind == "runs" {
			byCommit[c.Commit] = c
		}
	}
	if kinds["runs"] != len(d.Tested) || kinds["path"] != 1 || kinds["timeline"] != 1 {
		t.Errorf("charts by kind %v, want %d runs, 1 path, 1 timeline", kinds, len(d.Tested))
	}
	withMedian := 0
	for _, tc := range d.Tested {
		c, ok := byCommit[tc.Commit]
		if !ok {
			t.Errorf("no chart for tested commit %.10s", tc.Commit)
			continue
		}
		runs, _ := c.Dataset("runs")
		if runs.Elements != len(tc.Runs) || runs.Inside != len(tc.Runs) {
			t.Errorf("%.10s: %d points drawn (%d inside), want %d stored runs", tc.Commit, runs.Elements, runs.Inside, len(tc.Runs))
		}
		if len(tc.Runs) > 0 {
			withMedian++
		}
		// Both reference bands, each a filled pair and a median line.
		for _, side := range []string{"good " + hs[0][:10], "bad " + hs[30][:10]} {
			if b, ok := c.Dataset(side); !ok || b.Inside != 2 {
				t.Errorf("%.10s: band %q drawn %+v", tc.Commit, side, b)
			}
		}
	}
	if withMedian < 5 {
		t.Errorf("only %d tested commits with runs: the simulated bisection is too small to test", withMedian)
	}
	for _, c := range got.Canvases {
		switch c.Kind {
		case "path":
			if p, _ := c.Dataset("tested commits"); p.Elements != withMedian || p.Inside != withMedian {
				t.Errorf("path: %+v, want %d commits with runs", p, withMedian)
			}
		case "timeline":
			if len(c.Datasets) != 4 {
				t.Errorf("timeline datasets %+v, want tps and latency of good and bad", c.Datasets)
			}
			for _, ds := range c.Datasets {
				if ds.Elements != 3 || ds.Inside != 3 {
					t.Errorf("timeline %q: %d points (%d inside), want the run's 3 seconds", ds.Label, ds.Elements, ds.Inside)
				}
			}
		}
	}
}

// TestHTMLCompareRendersInChromium renders two comparisons (two thread
// counts) and checks their strip charts hold every stored run.
func TestHTMLCompareRendersInChromium(t *testing.T) {
	cs, hs := simmeasure.Chain(1)
	var docs []report.CompareDoc
	for i, factor := range []float64{0.7, 1} {
		m := &simmeasure.Measurer{Commits: cs, Base: 300, Culprits: map[string]float64{hs[1]: factor}, CV: 0.02, Rand: rand.New(rand.NewPCG(uint64(i), 1))}
		cfg := session.Config{Good: hs[0], Bad: hs[1], Repeats: 5, MaxRepeats: 12, Threshold: 0.05, Confidence: 0.95, Metric: session.TPS}
		s, err := session.NewComparison(cfg, m)
		if err != nil {
			t.Fatal(err)
		}
		cmp, _, err := s.Compare(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		res := s.Result()
		// A run rejected for having no transactions is kept and drawn.
		base := append(res.Runs[hs[0]], bisect.Run{Commit: hs[0]})
		docs = append(docs, report.CompareDoc{Base: hs[0], Head: hs[1], Metric: "tps", Threshold: 0.05, Threads: 1 + i,
			Result:  map[bool]string{true: report.CompareRegression, false: report.CompareNoRegression}[factor < 1],
			Verdict: cmp.Verdict.String(), BaseRuns: base, HeadRuns: res.Runs[hs[1]],
			Rows: report.CompareRows(base, res.Runs[hs[1]], session.TPS, cmp)})
	}
	path := render(t, "compare.html", report.Page{Title: "perfbisect compare", Compare: docs})
	got := browsertest.Load(t, path, "compare.png")
	if len(got.Errors) > 0 {
		t.Errorf("console errors: %q", got.Errors)
	}
	var runsCharts []browsertest.Canvas
	for _, c := range got.Canvases {
		if c.Kind == "runs" {
			runsCharts = append(runsCharts, c)
		}
	}
	if len(runsCharts) != 4 {
		t.Fatalf("%d strip charts, want base and head of 2 comparisons", len(runsCharts))
	}
	for i, c := range runsCharts {
		doc := docs[i/2]
		want := len(doc.BaseRuns)
		if i%2 == 1 {
			want = len(doc.HeadRuns)
		}
		if p, _ := c.Dataset("runs"); p.Elements != want || p.Inside != want || c.Runs != want {
			t.Errorf("chart %d: %+v (data-runs %d), want %d runs", i, p, c.Runs, want)
		}
	}
	// Several comparisons: the median against threads, a line per side
	// with a point per thread count.
	var sides []browsertest.Canvas
	for _, c := range got.Canvases {
		if c.Kind == "sides" {
			sides = append(sides, c)
		}
	}
	if len(sides) != 1 || !sides[0].Chart {
		t.Fatalf("%d sides charts, want 1 drawn", len(sides))
	}
	if len(sides[0].Datasets) != 2 {
		t.Errorf("sides chart: %+v, want a line for the base and one for the head", sides[0].Datasets)
	}
	for _, d := range sides[0].Datasets {
		if d.Elements != 2 || d.Inside != 2 {
			t.Errorf("line %s: %+v, want a point at each of 2 thread counts", d.Label, d)
		}
	}
}

// TestHTMLScanRendersInChromium renders a simulated scan with two shifts (a
// regression, then an improvement) and one commit that does not build: the
// series chart holds every run, and each segment between shifts has its line.
func TestHTMLScanRendersInChromium(t *testing.T) {
	cs, hs := simmeasure.Chain(14)
	m := &simmeasure.Measurer{Commits: cs, Base: 400, Culprits: map[string]float64{hs[5]: 0.7, hs[10]: 1.3}, CV: 0.02,
		Untestable: map[string]string{hs[8]: "build failed"}, Rand: rand.New(rand.NewPCG(3, 3))}
	res, err := scan.Scan(context.Background(), m, hs, 3, session.TPS, stats.ChangePointOptions{MinMagnitude: 0.05})
	if err != nil || len(res.Changes) != 2 {
		t.Fatalf("simulated scan: %v, %d changes", err, len(res.Changes))
	}
	doc := report.ScanDoc{From: "good", To: "bad", Metric: "tps", Threshold: 0.05}
	runs := 0
	for _, p := range res.Points {
		sp := report.ScanPoint{Commit: p.Commit, Subject: "s", Values: p.Values, Skip: p.Skip}
		if p.Skip == "" {
			sp.Median = stats.Median(p.Values)
		}
		runs += len(p.Values)
		doc.Points = append(doc.Points, sp)
	}
	for _, ch := range res.Changes {
		doc.Changes = append(doc.Changes, report.ScanChange{Change: ch, Start: "perfbisect start --good " + ch.Good[:12]})
	}
	path := render(t, "scan.html", report.Page{Title: "perfbisect scan", Scan: &doc})
	got := browsertest.Load(t, path, "scan.png")
	if len(got.Errors) > 0 {
		t.Errorf("console errors: %q", got.Errors)
	}
	if len(got.Canvases) != 1 || got.Canvases[0].Kind != "series" || got.Canvases[0].Painted == 0 {
		t.Fatalf("canvases %+v, want the one series chart", got.Canvases)
	}
	c := got.Canvases[0]
	if p, _ := c.Dataset("runs"); p.Elements != runs || p.Inside != runs || c.Runs != runs || runs != 14*3 {
		t.Errorf("series: %+v (data-runs %d), want %d runs (14 measured commits x 3)", p, c.Runs, runs)
	}
	segments := 0
	for _, ds := range c.Datasets {
		if strings.HasPrefix(ds.Label, "segment ") && ds.Inside == 2 {
			segments++
		}
	}
	if segments != 3 {
		t.Errorf("%d segment lines drawn, want 3 (two shifts): %+v", segments, c.Datasets)
	}
}

// TestHTMLSessionsWithoutRunsAndImprovements: a session that stopped before
// any run draws its (empty) charts with no console error; an improvement
// search is worded in old/new terms.
func TestHTMLSessionsWithoutRunsAndImprovements(t *testing.T) {
	empty := report.Document{Result: "error", Error: "good endpoint cannot be measured: build failed", Metric: "tps",
		Tested: []report.TestedCommit{{Commit: sha40('a'), Verdict: "skip", Skipped: "build failed", Runs: []bisect.Run{}}}}
	d, hs := simulated(t)
	d.Improvement = true
	for i, doc := range []report.Document{empty, d} {
		path := render(t, "p.html", report.Page{Title: "t", Bisect: &doc})
		got := browsertest.Load(t, path, "")
		if len(got.Errors) > 0 {
			t.Errorf("page %d: console errors %q", i, got.Errors)
		}
		drawn := 0
		for _, c := range got.Canvases {
			if c.Chart {
				drawn++
			}
		}
		if drawn != len(got.Canvases) || drawn < 2 {
			t.Errorf("page %d: %d of %d canvases drawn", i, drawn, len(got.Canvases))
		}
		raw, _ := os.ReadFile(path)
		if i == 1 && (!strings.Contains(string(raw), "first new commit (the improvement): <code>"+hs[19]) || strings.Contains(string(raw), "first bad commit")) {
			t.Errorf("improvement page not worded in old/new terms")
		}
	}
}

func sha40(c byte) string { return strings.Repeat(string(c), 40) }

// TestHTMLPosterior: a probabilistic search's page has the posterior chart,
// drawn, and its table names the culprit with its probability.
func TestHTMLPosterior(t *testing.T) {
	cs, hs := simmeasure.Chain(30)
	m := &simmeasure.Measurer{Commits: cs, Base: 500, Culprits: map[string]float64{hs[19]: 0.9}, CV: 0.03, Rand: rand.New(rand.NewPCG(5, 8))}
	cfg := session.Config{Good: hs[0], Bad: hs[30], Commits: cs, Repeats: 5, MaxRepeats: 60, Threshold: 0.02, Confidence: 0.99, Metric: session.TPS}
	s, err := session.New(cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background())
	if err != nil || res.FirstBad != hs[19] {
		t.Fatalf("simulated session: %v, first bad %q (%s)", err, res.FirstBad, res.Why)
	}
	d := report.NewDocument(res, session.TPS, func(h string) string { return "subject " + h[36:] })
	d.Place(hs[0], hs[30], cs)
	var culprit *report.PosteriorDoc
	for i := range d.Posterior {
		if d.Posterior[i].Commit == hs[19] {
			culprit = &d.Posterior[i]
		}
	}
	if culprit == nil || culprit.PFirstBad < 0.99 || culprit.Generation == nil || *culprit.Generation != 19 || culprit.Position == nil {
		t.Fatalf("posterior entry of the culprit: %+v", culprit)
	}
	path := render(t, "p.html", report.Page{Title: "t", Bisect: &d})
	got := browsertest.Load(t, path, "")
	if len(got.Errors) > 0 {
		t.Errorf("console errors %q", got.Errors)
	}
	drawn := false
	for _, c := range got.Canvases {
		if c.ID == "posterior" && c.Chart {
			drawn = true
		}
	}
	raw, _ := os.ReadFile(path)
	// The table is oldest first, as the text report's: the commits'
	// places after good rise down the rows.
	last := -1
	table, _, _ := strings.Cut(string(raw[strings.Index(string(raw), "<h2>Posterior"):]), "</table>")
	for _, m := range regexp.MustCompile(`<td>subject ([0-9]{4})</td>`).FindAllStringSubmatch(table, -1) {
		g, _ := strconv.Atoi(m[1]) // the subjects are the places' last digits
		if g < last {
			t.Errorf("posterior table: %s (place %d) after place %d: not oldest first", m[1], g, last)
		}
		last = g
	}
	if last < 0 {
		t.Errorf("posterior table has no commit rows")
	}
	if !drawn || !strings.Contains(string(raw), "<h2>Posterior (oldest first)</h2>") || !strings.Contains(string(raw), fmt.Sprintf("%.3g", culprit.PFirstBad)) {
		t.Errorf("posterior chart drawn %v; table with P(first bad) %.3g: %v", drawn, culprit.PFirstBad, strings.Contains(string(raw), fmt.Sprintf("%.3g", culprit.PFirstBad)))
	}
}

// TestHTMLExplainRendersInChromium renders an explanation (perfbisect
// explain's page) made from two sides' samples: the why, its tables, and
// the differential flame graph with the head's new function in it.
func TestHTMLExplainRendersInChromium(t *testing.T) {
	sample := func(stack string, n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString("mariadbd 1 1000000\n")
			for _, f := range strings.Split(stack, ";") {
				fmt.Fprintf(&b, "\t1234 %s (/usr/sbin/mariadbd)\n", f)
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	side := func(trace int, tps, cpu float64) []explain.Run {
		var rs []explain.Run
		for i := 0; i < 3; i++ {
			p, err := explain.ParseScript(strings.NewReader(sample("JOIN::exec;dispatch_command;do_command", 400+i) +
				sample("Json_writer::add_member;JOIN::optimize;dispatch_command;do_command", trace+i)))
			if err != nil {
				t.Fatal(err)
			}
			extra := map[bool]string{false: "Using join buffer (flat, BNLH join)", true: "Using join buffer (flat, BNL join)"}[trace > 0]
			rs = append(rs, explain.Run{Profile: p, Events: 1000, TPS: tps + float64(i), CPUPerTxn: cpu + float64(i),
				Status: map[string]int64{"Handler_read_next": 5000}, Variables: map[string]string{"optimizer_trace": fmt.Sprint(trace > 0)},
				Statements: []bench.StatementTime{{Name: "join", SQL: "SELECT COUNT(*) FROM c JOIN o ON o.code = c.code", Count: 1000,
					Time: time.Duration(cpu+float64(i)) * time.Millisecond, Plan: []bench.PlanRow{{ID: "1", SelectType: "SIMPLE", Table: "o", Type: "ALL", Rows: "2000", Extra: extra}}}}})
		}
		return rs
	}
	e := explain.Explain("good", "bad", side(0, 500, 400), side(120, 420, 520), explain.Options{})
	doc := report.ExplainDoc{Explanation: e, Workload: "oltp_read_only", Seconds: 30,
		Pinned: &report.PinnedDoc{Settings: []string{"optimizer_trace=false"}, Runs: 3, BaseTPS: 500, PinnedTPS: 498, HeadTPS: 420, Change: -0.004, HeadChange: -0.16,
			Lo: -0.02, Hi: 0.01, Coverage: 0.9, Verdict: report.PinnedAll}}
	var text strings.Builder
	if err := report.WriteExplain(&text, "text", doc); err != nil || !strings.Contains(text.String(), "why: CPU") || !strings.Contains(text.String(), "Json_writer::add_member") ||
		!strings.Contains(text.String(), "the plan of SELECT COUNT(*) FROM c JOIN o ON o.code = c.code changed") || !strings.Contains(text.String(), "the settings carry the regression") {
		t.Fatalf("text: %v\n%s", err, text.String())
	}
	path := render(t, "explain.html", report.Page{Title: "perfbisect explain good bad", Explain: &doc})
	got := browsertest.Load(t, path, "explain.png")
	if len(got.Errors) > 0 {
		t.Errorf("console errors: %q", got.Errors)
	}
	if len(got.Flames) != 1 || got.Flames[0].Frames != 6 || !slices.Contains(got.Flames[0].Labels, "Json_writer::add_member") {
		t.Errorf("flame graphs %+v: want one of 6 frames (all, do_command, dispatch_command, JOIN::exec, JOIN::optimize, Json_writer::add_member) with the new function labelled", got.Flames)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Why it is slower", "why: CPU", "optimizer_trace", "Json_writer::add_member", "plan changed", "BNL join", "BNLH join", "the settings carry the regression"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}
