package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/stats"
)

// Results of a comparison (CompareDoc.Result).
const (
	CompareRegression   = "regression"    // the head is worse by at least the threshold (exit 5)
	CompareNoRegression = "no-regression" // SAME, or a difference in the better direction (exit 0)
	CompareInconclusive = "inconclusive"  // UNKNOWN at --max-repeats (exit 4)
	CompareError        = "error"         // the comparison stopped on an error (exit 1 or 2)
)

// MetricRow is one metric of a comparison: the decision metric's row is the
// decision itself; the others are computed from the same runs at the same
// level, as evidence (benchstat-style: "~" when not significant).
type MetricRow struct {
	Metric  string            `json:"metric"`
	Unit    string            `json:"unit"`
	Decides bool              `json:"decides"` // the metric of --metric, whose verdict is the answer
	Compare *stats.Comparison `json:"compare"`
}

// CompareDoc is the document of perfbisect compare (--format json).
type CompareDoc struct {
	Result      string       `json:"result"` // CompareRegression, CompareNoRegression, CompareInconclusive, CompareError
	Error       string       `json:"error,omitempty"`
	Base        string       `json:"base"` // full hashes, or a side's key (side-...)
	Head        string       `json:"head"`
	BaseSide    *SideDoc     `json:"base_side,omitempty"`
	HeadSide    *SideDoc     `json:"head_side,omitempty"`
	BaseSubject string       `json:"base_subject"`
	HeadSubject string       `json:"head_subject"`
	Metric      string       `json:"metric"`
	Threshold   float64      `json:"threshold"`  // relative, e.g. 0.05
	Confidence  float64      `json:"confidence"` // the decision's level
	Threads     int          `json:"threads"`    // client threads of the workload
	Workload    string       `json:"workload"`   // bench.Options.Summary and the driver
	Verdict     string       `json:"verdict"`    // DIFFERENT, SAME, UNKNOWN
	Why         string       `json:"why"`        // one line
	Rows        []MetricRow  `json:"rows"`
	BaseRuns    []bisect.Run `json:"base_runs"`
	HeadRuns    []bisect.Run `json:"head_runs"`
	Finished    time.Time    `json:"finished"`
	// Explain is why the head is slower, from profiled runs after the
	// comparison (nil: not explained).
	Explain *ExplainDoc `json:"explain,omitempty"`
}

// SideDoc is one side of a comparison as it ran: as the user wrote it, what
// it resolved to, the server binary and its version line, and the option
// file it read ("" for none).
type SideDoc struct {
	Arg        string `json:"arg"`
	What       string `json:"what"` // "0123456789 of /src/mysql-5.7", "installed MariaDB 10.11.6"
	Server     string `json:"server,omitempty"`
	Version    string `json:"version,omitempty"`
	OptionFile string `json:"option_file"`
}

// line is the side in one line: what it is, its server and option file.
func (s *SideDoc) line() string {
	of := "option file " + s.OptionFile
	if s.OptionFile == "" {
		of = "no option file"
	}
	srv := ""
	if s.Server != "" {
		srv = fmt.Sprintf("; server %s (%s)", s.Server, s.Version)
	}
	return fmt.Sprintf("%s%s; %s", s.What, srv, of)
}

// sideName is how lines name a side: its argument when it is more than a
// revision (a side- key), else the revision's short hash.
func sideName(key string, sd *SideDoc) string {
	switch {
	case sd == nil || !strings.HasPrefix(key, "side-"):
		return fmt.Sprintf("%.10s", key)
	case sd.OptionFile != "":
		return sd.Arg + " [" + filepath.Base(sd.OptionFile) + "]"
	}
	return sd.Arg
}

// CompareRows returns one row per metric of session.Metrics for the runs of
// base and head: the decision metric's row is decision; each other metric is
// compared (stats.Compare) at the decision's level and threshold. Metrics no
// run measured (all zero) are left out.
func CompareRows(base, head []bisect.Run, metric session.Metric, decision stats.Comparison) []MetricRow {
	var rows []MetricRow
	for _, m := range session.Metrics {
		if m == metric {
			d := decision
			rows = append(rows, MetricRow{Metric: string(m), Unit: m.Unit(), Decides: true, Compare: &d})
			continue
		}
		x, y := usable(base, m), usable(head, m)
		if len(x) == 0 || len(y) == 0 {
			continue
		}
		c := stats.Compare(x, y, decision.Threshold, decision.Alpha)
		rows = append(rows, MetricRow{Metric: string(m), Unit: m.Unit(), Compare: &c})
	}
	return rows
}

// Formats of WriteCompare.
var CompareFormats = []string{"text", "markdown", "json", "junit"}

// WriteCompare renders doc in format (CompareFormats) to w.
func WriteCompare(w io.Writer, format string, doc CompareDoc) error {
	switch format {
	case "text", "", "markdown":
		var err error
		if format == "markdown" {
			err = compareMarkdown(w, doc)
		} else {
			err = compareText(w, doc)
		}
		if err == nil && doc.Explain != nil {
			WriteWhy(w, format == "markdown", *doc.Explain)
		}
		return err
	case "json":
		return writeIndented(w, doc)
	case "junit":
		return compareJUnit(w, doc)
	}
	return fmt.Errorf("--format %q: want %s", format, strings.Join(CompareFormats, ", "))
}

// WriteCompareSet renders the comparisons of several thread counts
// (--thread-list) or sides: one document as WriteCompare; several as a
// summary table followed by each comparison in full (text, markdown), a
// JSON array, or one JUnit test suite per comparison. The summary has a
// row per thread count; with one head, the deciding metric's medians,
// change, p and result; with several sides, a column per side (the base's
// median, each other side's median and change against the base, like the
// tables of bug reports).
func WriteCompareSet(w io.Writer, format string, docs []CompareDoc) error {
	if len(docs) == 1 {
		return WriteCompare(w, format, docs[0])
	}
	switch format {
	case "json":
		return writeIndented(w, docs)
	case "junit":
		var all junitSuites
		for _, d := range docs {
			s := junitSuiteOf(d)
			s.Name += fmt.Sprintf(" threads=%d", d.Threads)
			all.Suites = append(all.Suites, s)
		}
		return writeJUnit(w, all)
	case "text", "markdown", "":
	default:
		return fmt.Errorf("--format %q: want %s", format, strings.Join(CompareFormats, ", "))
	}
	md := format == "markdown"
	heads := headsOf(docs)
	if len(heads) > 1 {
		sidesTable(w, md, docs, heads)
	} else {
		threadsTable(w, md, docs)
	}
	for _, d := range docs {
		title := fmt.Sprintf("threads=%d", d.Threads)
		if len(heads) > 1 {
			title += fmt.Sprintf(", %s against %s", sideName(d.Head, d.HeadSide), sideName(d.Base, d.BaseSide))
		}
		fmt.Fprintf(w, "\n%s %s\n\n", map[bool]string{true: "##", false: "==="}[md], title)
		if err := WriteCompare(w, format, d); err != nil {
			return err
		}
	}
	return nil
}

// headsOf lists the heads of docs in their first order.
func headsOf(docs []CompareDoc) []string {
	var heads []string
	for _, d := range docs {
		if !slices.Contains(heads, d.Head) {
			heads = append(heads, d.Head)
		}
	}
	return heads
}

// decidingCells are the deciding metric's cells of d ("-" when it has none).
func decidingCells(d CompareDoc) (base, head, change, p string) {
	base, head, change, p = "-", "-", "-", "-"
	for _, r := range d.Rows {
		if r.Decides {
			base, head, change, p, _ = cells(r)
		}
	}
	return base, head, change, p
}

// table writes rows as a markdown table or aligned text.
func table(w io.Writer, md bool, header []string, rows [][]string) {
	if md {
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(header, " | "), strings.Repeat("---|", len(header)))
		for _, r := range rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// threadsTable is the summary of one head at several thread counts.
func threadsTable(w io.Writer, md bool, docs []CompareDoc) {
	var rows [][]string
	for _, d := range docs {
		b, h, ch, p := decidingCells(d)
		rows = append(rows, []string{fmt.Sprint(d.Threads), b, h, ch, p, d.Result})
	}
	table(w, md, []string{"threads", "base median", "head median", "change [CI]", "p", "result"}, rows)
}

// sidesTable is the summary of several sides: a row per thread count, the
// base's median, then each other side's median and change against the
// base, marked with its result.
func sidesTable(w io.Writer, md bool, docs []CompareDoc, heads []string) {
	var threads []int
	byCell := map[[2]string]CompareDoc{}
	header := []string{"threads", "base " + sideName(docs[0].Base, docs[0].BaseSide)}
	for _, h := range heads {
		for _, d := range docs {
			if d.Head == h {
				header = append(header, sideName(h, d.HeadSide))
				break
			}
		}
	}
	for _, d := range docs {
		if !slices.Contains(threads, d.Threads) {
			threads = append(threads, d.Threads)
		}
		byCell[[2]string{fmt.Sprint(d.Threads), d.Head}] = d
	}
	mark := map[string]string{CompareRegression: " REGRESSION", CompareInconclusive: " inconclusive", CompareError: " error"}
	markOf := func(d CompareDoc) string {
		if d.Result == CompareError && d.Error == "interrupted" {
			return " interrupted"
		}
		return mark[d.Result]
	}
	var rows [][]string
	for _, n := range threads {
		row := []string{fmt.Sprint(n), "-"}
		for _, h := range heads {
			d, ok := byCell[[2]string{fmt.Sprint(n), h}]
			if !ok {
				row = append(row, "-")
				continue
			}
			b, hd, ch, _ := decidingCells(d)
			if row[1] == "-" {
				row[1] = b
			}
			row = append(row, fmt.Sprintf("%s (%s)%s", hd, ch, markOf(d)))
		}
		rows = append(rows, row)
	}
	table(w, md, header, rows)
	fmt.Fprintf(w, "%s: median of the base, each side's median (its change against the base [interval]); the worst cell sets the exit code\n",
		docs[0].Metric)
}

// verdictLine is the answer in one line.
func verdictLine(doc CompareDoc) string {
	switch doc.Result {
	case CompareRegression:
		return fmt.Sprintf("REGRESSION: %s is slower than %s by at least %.1f%% in %s: %s", sideName(doc.Head, doc.HeadSide), sideName(doc.Base, doc.BaseSide), 100*doc.Threshold, doc.Metric, doc.Why)
	case CompareNoRegression:
		return fmt.Sprintf("no regression beyond %.1f%% in %s: %s", 100*doc.Threshold, doc.Metric, doc.Why)
	case CompareInconclusive:
		return fmt.Sprintf("INCONCLUSIVE at the repeat limit: %s", doc.Why)
	}
	return "ERROR: " + doc.Error
}

// cells formats a row's columns: base median [CI], head median [CI], change
// [CI], p, n.
func cells(r MetricRow) (base, head, change, p, n string) {
	c := r.Compare
	med := func(m float64, ci stats.Interval) string {
		if ci.OK {
			return fmt.Sprintf("%s [%s, %s]", num(m), num(ci.Lo), num(ci.Hi))
		}
		return num(m)
	}
	base, head = med(c.MedianOld, c.MedianOldCI), med(c.MedianNew, c.MedianNewCI)
	change = fmt.Sprintf("%+.1f%%", 100*c.Shift.Est)
	if c.Shift.Bounded() {
		change += fmt.Sprintf(" [%+.1f%%, %+.1f%%]", 100*c.Shift.Lo, 100*c.Shift.Hi)
	}
	if c.P > c.Alpha {
		change = "~ " + change // not significant at the decision's level
	}
	return base, head, change, fmt.Sprintf("%.2g", c.P), fmt.Sprintf("%d+%d", c.NOld, c.NNew)
}

func num(x float64) string {
	if math.Abs(x) >= 100 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.3g", x)
}

func compareText(w io.Writer, doc CompareDoc) error {
	fmt.Fprintf(w, "base %s %s\nhead %s %s\n", sideName(doc.Base, doc.BaseSide), doc.BaseSubject, sideName(doc.Head, doc.HeadSide), doc.HeadSubject)
	for _, sd := range []struct {
		name string
		doc  *SideDoc
	}{{"base", doc.BaseSide}, {"head", doc.HeadSide}} {
		if sd.doc != nil {
			fmt.Fprintf(w, "  %s: %s\n", sd.name, sd.doc.line())
		}
	}
	if doc.Workload != "" {
		fmt.Fprintf(w, "workload %s\n", doc.Workload)
	}
	if l := sidesLayouts(doc.BaseRuns, doc.HeadRuns); l != "" {
		fmt.Fprintf(w, "code layouts: %s\n", l)
	}
	fmt.Fprintln(w)
	if len(doc.Rows) == 0 { // nothing was measured (a build failed): no empty table
		fmt.Fprintln(w, verdictLine(doc))
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	med := medianHeader(doc)
	fmt.Fprintf(tw, "metric\tbase %s\thead %s\tchange [CI]\tp\tn\n", med, med)
	for _, r := range doc.Rows {
		b, h, ch, p, n := cells(r)
		name := metricLabel(r.Metric, r.Unit)
		if r.Decides {
			name += " *"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, b, h, ch, p, n)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n* decides; intervals at %.4g%%, \"~\": not significant at that level%s\n%s\n", 100*decisionConf(doc), noIntervalNote(doc), verdictLine(doc))
	for _, wn := range decisionWarnings(doc) {
		fmt.Fprintf(w, "warning: %s\n", wn)
	}
	return nil
}

// decisionWarnings are the deciding metric's comparison's warnings
// (stats.Comparison.Warnings: samples that differ in shape but not in
// location), each led by the metric's name.
func decisionWarnings(doc CompareDoc) []string {
	var out []string
	for _, r := range doc.Rows {
		if r.Decides && r.Compare != nil {
			for _, wn := range r.Compare.Warnings {
				out = append(out, r.Metric+": "+wn)
			}
		}
	}
	return out
}

// medianHeader is the medians' column title: "median [CI]" when some
// median has its interval, "median" when none has (too few runs).
func medianHeader(doc CompareDoc) string {
	for _, r := range doc.Rows {
		if c := r.Compare; c != nil && (c.MedianOldCI.OK || c.MedianNewCI.OK) {
			return "median [CI]"
		}
	}
	return "median"
}

// noIntervalNote explains a median printed without its interval (too few
// runs for a distribution-free one), or is "".
func noIntervalNote(doc CompareDoc) string {
	for _, r := range doc.Rows {
		if c := r.Compare; c != nil && (!c.MedianOldCI.OK || !c.MedianNewCI.OK) {
			return "; a median without [lo, hi] has too few runs for a distribution-free interval"
		}
	}
	return ""
}

// decisionConf is the confidence level of the intervals printed: the look
// that decided.
func decisionConf(doc CompareDoc) float64 {
	for _, r := range doc.Rows {
		if r.Decides && r.Compare != nil {
			return 1 - r.Compare.Alpha
		}
	}
	return doc.Confidence
}

func compareMarkdown(w io.Writer, doc CompareDoc) error {
	icon := map[string]string{CompareRegression: "🔴", CompareNoRegression: "🟢", CompareInconclusive: "🟡", CompareError: "⚠️"}[doc.Result]
	fmt.Fprintf(w, "### perfbisect compare: %s %s\n\n", icon, doc.Result)
	fmt.Fprintf(w, "base `%s` %s → head `%s` %s\n\n", sideName(doc.Base, doc.BaseSide), mdEscape(doc.BaseSubject), sideName(doc.Head, doc.HeadSide), mdEscape(doc.HeadSubject))
	for _, sd := range []struct {
		name string
		doc  *SideDoc
	}{{"base", doc.BaseSide}, {"head", doc.HeadSide}} {
		if sd.doc != nil {
			fmt.Fprintf(w, "- %s: %s\n", sd.name, mdEscape(sd.doc.line()))
		}
	}
	if doc.BaseSide != nil || doc.HeadSide != nil {
		fmt.Fprintln(w)
	}
	if doc.Workload != "" {
		fmt.Fprintf(w, "Workload: %s\n\n", mdEscape(doc.Workload))
	}
	if l := sidesLayouts(doc.BaseRuns, doc.HeadRuns); l != "" {
		fmt.Fprintf(w, "Code layouts: %s\n\n", mdEscape(l))
	}
	if len(doc.Rows) == 0 { // nothing was measured (a build failed): no empty table
		fmt.Fprintln(w, mdEscape(verdictLine(doc)))
		return nil
	}
	med := medianHeader(doc)
	fmt.Fprintf(w, "| metric | base %s | head %s | change [CI] | p | n |\n|---|---|---|---|---|---|\n", med, med)
	for _, r := range doc.Rows {
		b, h, ch, p, n := cells(r)
		name := metricLabel(r.Metric, r.Unit)
		if r.Decides {
			name = "**" + name + "**"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", name, b, h, ch, p, n)
	}
	fmt.Fprintf(w, "\nIntervals at %.4g%%; **bold**: the metric that decides; `~`: not significant at that level%s.\n\n%s\n", 100*decisionConf(doc), noIntervalNote(doc), mdEscape(verdictLine(doc)))
	for _, wn := range decisionWarnings(doc) {
		fmt.Fprintf(w, "\n> **Warning**: %s\n", mdEscape(wn))
	}
	return nil
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// compareJUnit writes JUnit XML: one test case per metric; the deciding
// metric's case fails on a regression, is skipped when inconclusive and is an
// error when the comparison failed, so that CI systems show a failed
// performance test.
func compareJUnit(w io.Writer, doc CompareDoc) error {
	return writeJUnit(w, junitSuites{Suites: []junitSuite{junitSuiteOf(doc)}})
}

// junitSuiteOf is the test suite of one comparison.
func junitSuiteOf(doc CompareDoc) junitSuite {
	s := junitSuite{Name: fmt.Sprintf("perfbisect compare %s..%s", sideName(doc.Base, doc.BaseSide), sideName(doc.Head, doc.HeadSide))}
	if len(doc.Rows) == 0 {
		doc.Rows = []MetricRow{{Metric: doc.Metric, Decides: true}}
	}
	for _, r := range doc.Rows {
		tc := junitCase{Classname: "perfbisect.compare", Name: r.Metric}
		if r.Compare != nil {
			b, h, ch, p, n := cells(r)
			tc.SystemOut = fmt.Sprintf("base %s, head %s, change %s, p %s, n %s", b, h, ch, p, n)
		}
		if r.Decides {
			msg := &junitMessage{Message: verdictLine(doc), Text: tc.SystemOut}
			switch doc.Result {
			case CompareRegression:
				tc.Failure, s.Failures = msg, s.Failures+1
			case CompareInconclusive:
				tc.Skipped, s.Skipped = msg, s.Skipped+1
			case CompareError:
				tc.Error, s.Errors = msg, s.Errors+1
			}
		}
		s.Cases = append(s.Cases, tc)
	}
	s.Tests = len(s.Cases)
	return s
}

func writeJUnit(w io.Writer, all junitSuites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WriteGitHubAnnotations writes the workflow command of each of docs
// (GitHubAnnotation), a line each.
func WriteGitHubAnnotations(w io.Writer, docs []CompareDoc) {
	for _, doc := range docs {
		fmt.Fprintln(w, GitHubAnnotation(doc))
	}
}

// GitHubAnnotation returns the GitHub Actions workflow command for doc (an
// error on a regression or a failure, a warning when inconclusive, a notice
// otherwise), for printing when GITHUB_ACTIONS is set.
func GitHubAnnotation(doc CompareDoc) string {
	level := map[string]string{CompareRegression: "error", CompareInconclusive: "warning", CompareNoRegression: "notice"}[doc.Result]
	if level == "" {
		level = "error"
	}
	msg := strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(verdictLine(doc))
	return fmt.Sprintf("::%s title=perfbisect compare::%s", level, msg)
}

// writeIndented writes v to w as JSON indented by two spaces, the form of
// every JSON document perfbisect prints.
func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
