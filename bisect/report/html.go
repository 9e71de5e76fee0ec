package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/explain"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/stats"
)

// Chart.js 4.6.1 (MIT, assets/LICENSE.chartjs.md), dist/chart.umd.min.js of
// the npm package unchanged; scripts/update-chartjs.sh replaces it.
//
//go:embed assets/chart.umd.min.js
var chartJS string

//go:embed assets/page.js
var pageJS string

//go:embed assets/page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"short":   func(h string) string { return fmt.Sprintf("%.10s", h) },
	"whyLine": func(d *ExplainDoc) string { return why(d.Explanation) },
	"us":      func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"perTxn":  perTxn,
	"rel":     relChange,
	"delta": func(f explain.FunctionChange) string {
		return fmt.Sprintf("%+.1f [%+.1f, %+.1f]", f.Change, f.Lo, f.Hi)
	},
	"stmtDelta": func(s explain.StatementChange) string {
		return fmt.Sprintf("%+.1f%% [%+.1f%%, %+.1f%%]", 100*s.Change, 100*s.Lo, 100*s.Hi)
	},
	"pinnedLine": func(p *PinnedDoc) string {
		var b strings.Builder
		writePinned(&b, p)
		return strings.TrimSpace(b.String())
	},
	"file":  fileName,
	"share": share,
	"side":  sideName,
	"sideLine": func(sd *SideDoc) string {
		if sd == nil {
			return ""
		}
		return sd.line()
	},
	// oldestFirst orders a posterior as the text report does.
	"oldestFirst": oldestFirst,
	"num":         num,
	"pct": func(p *float64) string {
		if p == nil {
			return ""
		}
		return fmt.Sprintf("%+.1f%%", 100**p)
	},
	"f": func(p *float64) string {
		if p == nil {
			return ""
		}
		return num(*p)
	},
	"p": func(p *float64) string {
		if p == nil {
			return ""
		}
		return fmt.Sprintf("%.2g", *p)
	},
	"cells": func(r MetricRow) []string {
		b, h, ch, p, n := cells(r)
		return []string{b, h, ch, p, n}
	},
	"verdictLine": verdictLine,
	"pctOf":       func(x float64) float64 { return 100 * x },
	"inc":         func(i int) int { return i + 1 },
	"interval": func(x, lo, hi *float64) string {
		if x == nil || lo == nil || hi == nil {
			return "–"
		}
		return fmt.Sprintf("%.2f [%.2f, %.2f]", *x, *lo, *hi)
	},
	"runsOf": func(sc *ScanDoc) int {
		n := 0
		for _, p := range sc.Points {
			n += len(p.Values)
		}
		return n
	},
	"conf": decisionConf,
}).Parse(pageHTML))

// Page is the content of an HTML report (WriteHTML): one bisection, or the
// comparisons of one perfbisect compare (one per thread count), with what the
// store knows about how they were measured.
type Page struct {
	Title   string
	Command string        // the command line that made the session, as typed
	Bisect  *Document     // a bisection, or nil
	Compare []CompareDoc  // the comparisons, or nil
	Scan    *ScanDoc      // a scan, or nil
	Explain *ExplainDoc   // an explanation (perfbisect explain), or nil
	Options []OptionsText // the options the server read, per measured commit (the last run's)
	Builds  []BuildFact   // build attempts, in order
}

// OptionsText is the effective server options of a commit's run, one per line
// as mysqld --print-defaults lists them.
type OptionsText struct {
	Commit string
	Text   string
}

// BuildFact is one build attempt of a revision.
type BuildFact struct {
	Commit  string
	Seconds float64 // wall time; near 0 for a cache hit
	Flavor  string
	Version string
	Prefix  string // installed tree; "" when the build failed
	Error   string // why it failed
	Cached  bool   // found in the build cache: nothing was built
}

// chart is one Chart.js chart as page.js draws it. Kinds: "path" (bisect
// path: x = position in the range, y = the commit's median), "runs" (one
// commit's runs in the order measured, with the reference bands), "timeline"
// (per-second series of chosen runs), "series" (a scan: every run of every
// commit, the medians and the segments between shifts).
type chart struct {
	ID     string   `json:"id"`
	Kind   string   `json:"kind"`
	Title  string   `json:"title"`
	Commit string   `json:"commit,omitempty"`
	X      string   `json:"x"` // axis titles
	Y      string   `json:"y"`
	Y2     string   `json:"y2,omitempty"`
	Points []point  `json:"points,omitempty"`
	Bands  []band   `json:"bands,omitempty"`
	Lines  []series `json:"lines,omitempty"`
	XMin   float64  `json:"xmin"` // the x axis's range when XMax is set
	XMax   float64  `json:"xmax,omitempty"`
	// Flame is a "flame" chart's call tree (a differential flame graph,
	// drawn by page.js without Chart.js).
	Flame *explain.Frame `json:"flame,omitempty"`
}

// point is a marker; Class picks its colour: good, bad, skip, untested,
// rejected (a run whose value was not usable), base, head.
type point struct {
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
	Label string  `json:"label"`
	Class string  `json:"class"`
}

// band is a reference: the middle half (Lo = 25th, Hi = 75th percentile) and
// median of a reference commit's runs.
type band struct {
	Label       string  `json:"label"`
	Class       string  `json:"class"`
	Lo, Mid, Hi float64 `json:"-"`
}

func (b band) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"label": b.Label, "class": b.Class, "lo": b.Lo, "mid": b.Mid, "hi": b.Hi})
}

type series struct {
	Label  string  `json:"label"`
	Class  string  `json:"class"`
	Axis   string  `json:"axis"` // y or y2
	Dashed bool    `json:"dashed,omitempty"`
	Points []point `json:"points"`
}

// pageData is what the template renders.
type pageData struct {
	Page
	Charts   []chart
	Data     template.JS // {"charts": [...]} for page.js
	ChartJS  template.JS
	PageJS   template.JS
	Facts    [][2]string
	Tested   []testedRow
	Sections []compareSection
	Sides    *chart       // several comparisons: the metric's median against threads, a line per side
	Whys     []whySection // the explanations, in the page's order
	// BisectWhy and ExplainWhy are the bisection's and perfbisect
	// explain's explanation (nil: none).
	BisectWhy, ExplainWhy *whySection
	Generated             string
}

type testedRow struct {
	TestedCommit
	N       int
	ChartID string
	Change  string // against the good runs of its own blocks (blockChange)
}

// whySection is an explanation on the page, with the id of its flame graph ("":
// none).
type whySection struct {
	Doc   *ExplainDoc
	Flame string
}

// addWhy adds doc's explanation (when there is one) and its flame graph.
func (d *pageData) addWhy(doc *ExplainDoc, all *[]chart) *whySection {
	if doc == nil {
		return nil
	}
	w := whySection{Doc: doc}
	if doc.Flame != nil {
		w.Flame = fmt.Sprintf("flame-%d", len(d.Whys))
		*all = append(*all, chart{ID: w.Flame, Kind: "flame", Title: doc.Base + " → " + doc.Head, Flame: doc.Flame})
	}
	d.Whys = append(d.Whys, w)
	return &d.Whys[len(d.Whys)-1]
}

type compareSection struct {
	Doc      CompareDoc
	Runs     []chart
	Timeline *chart
	Why      *whySection
}

// WriteHTML renders p as one self-contained HTML page (Chart.js and the data
// inline; no network access when opened): for a bisection, the bisect path
// over the range, one strip chart per tested commit (its runs in the order
// measured, with the good and bad endpoints' runs as bands: middle half and
// median), the per-second timeline of the median run of each endpoint, every
// decision with its evidence, the effective options, builds and host facts;
// for comparisons, the metric table, base and head strip charts and
// timelines; for a scan, the series chart and its shifts. Every chart canvas
// carries data-kind (path, runs, timeline, series) and, for runs and series,
// data-runs (the number of stored runs it plots; runs charts also
// data-commit). Secret option values in p.Options are redacted
// (RedactOptions). Errors are the template's or JSON's (none expected).
func WriteHTML(w io.Writer, p Page) error {
	p.Options = append([]OptionsText(nil), p.Options...)
	for i := range p.Options {
		p.Options[i].Text = RedactOptions(p.Options[i].Text)
	}
	d := pageData{Page: p, ChartJS: template.JS(stripSourceMap(chartJS)), PageJS: template.JS(pageJS),
		Generated: time.Now().UTC().Format("2006-01-02 15:04:05 UTC")}
	var all []chart
	var facts, compareBase, compareHead []bisect.Run
	if doc := p.Bisect; doc != nil {
		m := session.Metric(doc.Metric)
		runsOf := map[string][]bisect.Run{}
		for _, tc := range doc.Tested {
			runsOf[tc.Commit] = tc.Runs
			facts = append(facts, tc.Runs...)
		}
		good, bad := doc.Good, doc.Bad
		names := []string{"good", "bad"}
		if doc.Improvement {
			names = []string{"old", "new"}
		}
		bands := refBands(m, []string{good, bad}, names, runsOf)
		all = append(all, pathChart(doc, m))
		if len(doc.Posterior) > 0 {
			all = append(all, posteriorChart(doc))
		}
		var goodRuns []bisect.Run
		if g := doc.tested(doc.Good); g != nil {
			goodRuns = g.Runs
		}
		for i, tc := range doc.Tested {
			c := runsChart(fmt.Sprintf("runs-%d", i), tc.Commit, tc.Subject, tc.Runs, m, bands, verdictClass(tc.Verdict))
			all = append(all, c)
			d.Tested = append(d.Tested, testedRow{TestedCommit: tc, N: len(tc.Runs), ChartID: c.ID, Change: blockChange(doc, goodRuns, tc, m)})
		}
		culprit := bad
		if doc.FirstBad != nil {
			culprit = *doc.FirstBad
		}
		if tl, ok := timeline("timeline", m, []string{good, culprit}, names, runsOf); ok {
			all = append(all, tl)
		}
		d.BisectWhy = d.addWhy(doc.Explain, &all)
	}
	for i, doc := range p.Compare {
		m := session.Metric(doc.Metric)
		runsOf := map[string][]bisect.Run{doc.Base: doc.BaseRuns, doc.Head: doc.HeadRuns}
		facts = append(append(facts, doc.BaseRuns...), doc.HeadRuns...)
		compareBase, compareHead = append(compareBase, doc.BaseRuns...), append(compareHead, doc.HeadRuns...)
		bands := refBands(m, []string{doc.Base, doc.Head}, []string{"base", "head"}, runsOf)
		sec := compareSection{Doc: doc}
		for j, side := range []struct {
			hash, subject, class string
			runs                 []bisect.Run
		}{{doc.Base, doc.BaseSubject, "base", doc.BaseRuns}, {doc.Head, doc.HeadSubject, "head", doc.HeadRuns}} {
			c := runsChart(fmt.Sprintf("runs-%d-%d", i, j), side.hash, side.class+" "+side.subject, side.runs, m, bands, side.class)
			sec.Runs = append(sec.Runs, c)
			all = append(all, c)
		}
		if tl, ok := timeline(fmt.Sprintf("timeline-%d", i), m, []string{doc.Base, doc.Head}, []string{"base", "head"}, runsOf); ok {
			sec.Timeline = &tl
			all = append(all, tl)
		}
		if w := d.addWhy(doc.Explain, &all); w != nil {
			sec.Why = w
		}
		d.Sections = append(d.Sections, sec)
	}
	if len(p.Compare) > 1 {
		c := sidesChart(p.Compare)
		d.Sides = &c
		all = append(all, c)
	}
	if sc := p.Scan; sc != nil {
		all = append(all, seriesChart(sc))
	}
	d.ExplainWhy = d.addWhy(p.Explain, &all)
	d.Charts = all
	js, err := json.Marshal(map[string]any{"charts": all})
	if err != nil {
		return err
	}
	d.Data = template.JS(js)
	layouts := layoutsOf(facts)
	if len(p.Compare) > 0 {
		layouts = sidesLayouts(compareBase, compareHead) // side by side, as the comparison's text says them
	}
	d.Facts = hostFacts(facts, layouts)
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, d); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// stripSourceMap drops the sourceMappingURL comment: the map is not shipped.
func stripSourceMap(js string) string {
	if i := strings.LastIndex(js, "//# sourceMappingURL="); i >= 0 {
		return js[:i]
	}
	return js
}

func verdictClass(v string) string {
	switch v {
	case "good", "bad", "skip":
		return v
	}
	return "untested"
}

// refBands returns the bands of the reference commits that have usable runs.
func refBands(m session.Metric, hashes, names []string, runsOf map[string][]bisect.Run) []band {
	var out []band
	for i, h := range hashes {
		vals := usable(runsOf[h], m)
		if len(vals) == 0 {
			continue
		}
		out = append(out, band{Label: fmt.Sprintf("%s %.10s", names[i], h), Class: names[i],
			Lo: quantile(vals, 0.25), Mid: stats.Median(vals), Hi: quantile(vals, 0.75)})
	}
	return out
}

// quantile is the q-quantile of xs with linear interpolation between order
// statistics (Hyndman & Fan type 7, R's default).
func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	h := q * float64(len(s)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (h-lo)*(s[i+1]-s[i])
}

func axisName(m session.Metric) string { return metricLabel(string(m), m.Unit()) }

// metricLabel is a metric's name with its unit, once when they are the same
// word ("tps", "p95 (ms)").
func metricLabel(metric, unit string) string {
	if unit == "" || unit == metric {
		return metric
	}
	return metric + " (" + unit + ")"
}

// runsChart plots every stored run of a commit, in the order measured: a run
// whose value is not usable (rejected and retried) is drawn at 0 as
// "rejected".
func runsChart(id, hash, subject string, runs []bisect.Run, m session.Metric, bands []band, class string) chart {
	c := chart{ID: id, Kind: "runs", Commit: hash, Title: fmt.Sprintf("%.10s %s", hash, trunc(subject, 48)), Points: []point{},
		X: "run (in the order measured)", Y: axisName(m), Bands: bands, XMax: float64(len(runs)) + 1}
	for i, r := range runs {
		v := m.Value(r)
		cl := class
		if !(v > 0) || math.IsInf(v, 0) {
			v, cl = 0, "rejected"
		}
		c.Points = append(c.Points, point{X: float64(i + 1), Y: v, Class: cl,
			Label: fmt.Sprintf("run %d: %s %s, started %s", i+1, num(v), m.Unit(), r.Started.UTC().Format("15:04:05"))})
	}
	return c
}

// pathChart places every tested commit with a usable median at its position
// in the range, coloured by verdict, and joins them in the order tested.
func pathChart(d *Document, m session.Metric) chart {
	c := chart{ID: "path", Kind: "path", Title: "bisect path", X: "commits after good (oldest first)", Y: "median " + axisName(m),
		XMax: float64(d.Commits)}
	line := series{Label: "order tested", Class: "path", Axis: "y", Points: []point{}}
	for i, tc := range d.Tested {
		vals := usable(tc.Runs, m)
		if len(vals) == 0 {
			continue
		}
		x := float64(i)
		if tc.Position != nil {
			x = float64(*tc.Position)
		}
		pt := point{X: x, Y: stats.Median(vals), Class: verdictClass(tc.Verdict),
			Label: fmt.Sprintf("#%d %.10s %s: %s, median %s over %s", i+1, tc.Commit, trunc(tc.Subject, 50), tc.Verdict, num(stats.Median(vals)), runsText(len(vals)))}
		c.Points = append(c.Points, pt)
		line.Points = append(line.Points, pt)
	}
	c.Lines = []series{line}
	return c
}

// posteriorChart plots a probabilistic search's posterior over the range:
// x is the commit's place after good, one line the probability that it is
// the first bad commit, the other that it is bad; measured commits are
// marked with their position between good (0) and bad (1).
func posteriorChart(d *Document) chart {
	c := chart{ID: "posterior", Kind: "posterior", Title: "posterior over the range", X: "commits after good (oldest first)",
		Y: "probability; position between good (0) and bad (1)", XMax: float64(d.Commits)}
	first := series{Label: "P(first bad commit)", Class: "bad", Axis: "y", Points: []point{}}
	bad := series{Label: "P(bad)", Class: "path", Axis: "y", Dashed: true, Points: []point{}}
	if d.Improvement {
		first.Label, bad.Label = "P(first new commit)", "P(new)"
	}
	for _, p := range oldestFirst(d.Posterior) {
		x := float64(gen(p))
		label := fmt.Sprintf("%.10s %s: P(first) %.3g, P(bad) %.3g, %s", p.Commit, trunc(p.Subject, 50), p.PFirstBad, p.PBad, runsText(p.Runs))
		first.Points = append(first.Points, point{X: x, Y: p.PFirstBad, Label: label})
		bad.Points = append(bad.Points, point{X: x, Y: p.PBad, Label: label})
		if p.Position != nil {
			class := "untested"
			switch {
			case p.PBad >= d.Confidence:
				class = "bad"
			case 1-p.PBad >= d.Confidence:
				class = "good"
			}
			c.Points = append(c.Points, point{X: x, Y: *p.Position, Class: class, Label: label + fmt.Sprintf(", position %.2f", *p.Position)})
		}
	}
	c.Lines = []series{first, bad}
	return c
}

// oldestFirst returns a copy of a posterior ordered by the commits' places
// after good (the stored order is newest first).
func oldestFirst(ps []PosteriorDoc) []PosteriorDoc {
	ps = append([]PosteriorDoc(nil), ps...)
	sort.SliceStable(ps, func(i, j int) bool { return gen(ps[i]) < gen(ps[j]) })
	return ps
}

func gen(p PosteriorDoc) int {
	if p.Generation == nil {
		return 0
	}
	return *p.Generation
}

// seriesChart plots a scan: x is the commit's index in the series (oldest
// first), every run a point, the commits' medians joined, and each segment
// between two shifts a line at its median (good before the first shift and
// after an improvement, bad after a regression).
func seriesChart(sc *ScanDoc) chart {
	m := session.Metric(sc.Metric)
	c := chart{ID: "series", Kind: "series", Title: "scan " + sc.From + ".." + sc.To, X: "commit (oldest first)", Y: axisName(m),
		XMin: -0.5, XMax: float64(len(sc.Points)) - 0.5}
	index := map[string]int{}
	medians := series{Label: "median per commit", Class: "path", Axis: "y", Points: []point{}}
	for i, p := range sc.Points {
		index[p.Commit] = i
		for j, v := range p.Values {
			if !finite(v) {
				continue
			}
			c.Points = append(c.Points, point{X: float64(i), Y: v, Class: "base",
				Label: fmt.Sprintf("%.10s %s: run %d, %s %s", p.Commit, trunc(p.Subject, 40), j+1, num(v), m.Unit())})
		}
		if p.Skip == "" && len(p.Values) > 0 && finite(p.Median) {
			medians.Points = append(medians.Points, point{X: float64(i), Y: p.Median})
		}
	}
	c.Lines = append(c.Lines, medians)
	from, level, class := 0, 0.0, "good"
	segment := func(to int) {
		if to < from {
			return
		}
		c.Lines = append(c.Lines, series{Label: fmt.Sprintf("segment %d..%d median", from, to), Class: class, Axis: "y", Dashed: true,
			Points: []point{{X: float64(from) - 0.4, Y: level}, {X: float64(to) + 0.4, Y: level}}})
	}
	for k, ch := range sc.Changes {
		at, ok := index[ch.Bad]
		if !ok {
			continue
		}
		if k == 0 {
			level = ch.Before
		}
		segment(at - 1)
		from, level, class = at, ch.After, map[bool]string{true: "bad", false: "good"}[ch.Regression]
	}
	if len(sc.Changes) > 0 {
		segment(len(sc.Points) - 1)
	}
	return c
}

// sidesChart plots several comparisons (sides, thread counts) as the
// reports of the field do: x the client threads, y the deciding metric's
// median, a line for the base and one for each other side.
func sidesChart(docs []CompareDoc) chart {
	m := session.Metric(docs[0].Metric)
	c := chart{ID: "sides", Kind: "sides", Title: axisName(m) + " by client threads", X: "client threads", Y: axisName(m)}
	index := map[string]int{} // by side key
	line := func(key string, sd *SideDoc, class string) int {
		if i, ok := index[key]; ok {
			return i
		}
		index[key] = len(c.Lines)
		c.Lines = append(c.Lines, series{Label: sideName(key, sd), Class: class, Axis: "y", Points: []point{}})
		return len(c.Lines) - 1
	}
	classes := []string{"head", "bad", "good", "skip", "path"}
	done := map[[2]string]bool{}
	for _, d := range docs {
		for _, s := range []struct {
			key  string
			sd   *SideDoc
			runs []bisect.Run
		}{{d.Base, d.BaseSide, d.BaseRuns}, {d.Head, d.HeadSide, d.HeadRuns}} {
			k := [2]string{s.key, fmt.Sprint(d.Threads)}
			xs := usable(s.runs, m)
			if done[k] || len(xs) == 0 {
				continue
			}
			done[k] = true
			class := "base"
			if s.key != d.Base {
				class = classes[min(len(c.Lines)-1, len(classes)-1)]
			}
			i := line(s.key, s.sd, class)
			c.Lines[i].Points = append(c.Lines[i].Points, point{X: float64(d.Threads), Y: stats.Median(xs)})
		}
	}
	for i := range c.Lines {
		sort.Slice(c.Lines[i].Points, func(a, b int) bool { return c.Lines[i].Points[a].X < c.Lines[i].Points[b].X })
	}
	return c
}

// timeline plots the per-second tps and latency percentile of the median run
// of each named commit; ok is false when no run kept a series.
func timeline(id string, m session.Metric, hashes, names []string, runsOf map[string][]bisect.Run) (chart, bool) {
	c := chart{ID: id, Kind: "timeline", Title: "per-second timeline of the median run", X: "seconds into the measured window",
		Y: "tps (solid)", Y2: "latency percentile of the workload, ms (dashed)"}
	for i, h := range hashes {
		r, ok := medianRun(runsOf[h], m)
		if !ok {
			continue
		}
		tps := series{Label: fmt.Sprintf("%s %.10s tps", names[i], h), Class: names[i], Axis: "y", Points: []point{}}
		lat := series{Label: fmt.Sprintf("%s %.10s latency", names[i], h), Class: names[i], Axis: "y2", Dashed: true, Points: []point{}}
		for _, s := range r.Series {
			at := s.At.Seconds()
			if finite(s.TPS) {
				tps.Points = append(tps.Points, point{X: at, Y: s.TPS})
			}
			lat.Points = append(lat.Points, point{X: at, Y: float64(s.Pct) / float64(time.Millisecond)})
		}
		c.Lines = append(c.Lines, tps, lat)
	}
	return c, len(c.Lines) > 0
}

// medianRun returns the run with a series whose metric value is the median
// of those runs (the lower middle one for an even count).
func medianRun(runs []bisect.Run, m session.Metric) (bisect.Run, bool) {
	var with []bisect.Run
	for _, r := range runs {
		if v := m.Value(r); len(r.Series) > 0 && v > 0 && !math.IsInf(v, 0) {
			with = append(with, r)
		}
	}
	if len(with) == 0 {
		return bisect.Run{}, false
	}
	sort.SliceStable(with, func(i, j int) bool { return m.Value(with[i]) < m.Value(with[j]) })
	return with[(len(with)-1)/2], true
}

// hostFacts lists the facts of the runs, sorted by name; a fact that differs
// between runs lists its distinct values. The code layouts are not listed
// seed by seed: layouts, when not "", is said once as "code layouts".
func hostFacts(runs []bisect.Run, layouts string) [][2]string {
	vals := map[string][]string{}
	if layouts != "" {
		vals["code layouts"] = []string{layouts}
	}
	for _, r := range runs {
		for k, v := range r.Facts {
			if k != bisect.FactLayout && !slices.Contains(vals[k], v) {
				vals[k] = append(vals[k], v)
			}
		}
	}
	var out [][2]string
	for k, v := range vals {
		out = append(out, [2]string{k, strings.Join(v, " | ")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// runsText is "1 run", "9 runs".
func runsText(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}
