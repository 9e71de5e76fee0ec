package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
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
	Base        string       `json:"base"` // full hashes
	Head        string       `json:"head"`
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
	case "text", "":
		return compareText(w, doc)
	case "markdown":
		return compareMarkdown(w, doc)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	case "junit":
		return compareJUnit(w, doc)
	}
	return fmt.Errorf("--format %q: want %s", format, strings.Join(CompareFormats, ", "))
}

// WriteCompareSet renders the comparisons of several thread counts
// (--thread-list): one document as WriteCompare; several as a summary table
// (a row per thread count: the deciding metric's medians, change, p, result)
// followed by each comparison in full (text, markdown), a JSON array, or one
// JUnit test suite per thread count.
func WriteCompareSet(w io.Writer, format string, docs []CompareDoc) error {
	if len(docs) == 1 {
		return WriteCompare(w, format, docs[0])
	}
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(docs)
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
	if md {
		fmt.Fprintf(w, "| threads | base median | head median | change [CI] | p | result |\n|---|---|---|---|---|---|\n")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if !md {
		fmt.Fprintf(tw, "threads\tbase median\thead median\tchange [CI]\tp\tresult\n")
	}
	for _, d := range docs {
		b, h, ch, p := "-", "-", "-", "-"
		for _, r := range d.Rows {
			if r.Decides {
				b, h, ch, p, _ = cells(r)
			}
		}
		if md {
			fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s |\n", d.Threads, b, h, ch, p, d.Result)
		} else {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", d.Threads, b, h, ch, p, d.Result)
		}
	}
	tw.Flush()
	for _, d := range docs {
		fmt.Fprintf(w, "\n%s threads=%d\n\n", map[bool]string{true: "####", false: "==="}[md], d.Threads)
		if err := WriteCompare(w, format, d); err != nil {
			return err
		}
	}
	return nil
}

// verdictLine is the answer in one line.
func verdictLine(doc CompareDoc) string {
	switch doc.Result {
	case CompareRegression:
		return fmt.Sprintf("REGRESSION: %.10s is slower than %.10s by at least %.1f%% in %s: %s", doc.Head, doc.Base, 100*doc.Threshold, doc.Metric, doc.Why)
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
	fmt.Fprintf(w, "base %.10s %s\nhead %.10s %s\n", doc.Base, doc.BaseSubject, doc.Head, doc.HeadSubject)
	if doc.Workload != "" {
		fmt.Fprintf(w, "workload %s\n", doc.Workload)
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
	return nil
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
	icon := map[string]string{CompareRegression: "🔴", CompareNoRegression: "🟢", CompareInconclusive: "🟡"}[doc.Result]
	fmt.Fprintf(w, "### perfbisect compare: %s %s\n\n", icon, doc.Result)
	fmt.Fprintf(w, "base `%.10s` %s → head `%.10s` %s\n\n", doc.Base, mdEscape(doc.BaseSubject), doc.Head, mdEscape(doc.HeadSubject))
	if doc.Workload != "" {
		fmt.Fprintf(w, "Workload: %s\n\n", mdEscape(doc.Workload))
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
	s := junitSuite{Name: fmt.Sprintf("perfbisect compare %.10s..%.10s", doc.Base, doc.Head)}
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
