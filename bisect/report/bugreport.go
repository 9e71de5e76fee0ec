package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/stats"
)

// reportHostFacts are the run facts a bug report lists under "host", in order.
var reportHostFacts = []string{"cpu_model", "cpus", "mem_bytes", "governor", "kernel", "datadir_fs", "server_cpus", "client_cpus"}

// WriteBisectReport writes a stored bisection as a report to paste into a
// bug (format "text", or "markdown" for Jira and GitHub): the answer with
// git's own line ("<sha> is the first bad commit"), the good and bad
// endpoints' medians with 95% intervals and the change between them, every
// tested commit's change against the good runs measured in its own blocks
// (with its 95% interval: on a drifting machine a session-wide median
// misleads), the decisions, and how it was measured: the command line, the
// server's version, the builds, the host and the effective server options
// (secret values redacted). p.Bisect must be set; p.Options and p.Builds may
// be empty (the report then says so).
func WriteBisectReport(w io.Writer, format string, p Page) error {
	d := p.Bisect
	if d == nil {
		return fmt.Errorf("no bisection in the page")
	}
	md := format == "markdown"
	writeBisectAnswer(w, md, d)
	writeEndpoints(w, md, d)
	writeTested(w, md, d)
	// Why, or how to know.
	switch {
	case d.Explain != nil:
		WriteWhy(w, md, *d.Explain)
	case d.Tarballs && d.Releases != nil && d.Releases.Good != "":
		fmt.Fprintf(w, "\nwhy: these are releases; the next session bisects the commits between %s and %s from source, and explains its first bad commit\n", d.Releases.Good, d.Releases.Bad)
	case d.FirstBad != nil && !d.Improvement:
		fmt.Fprintf(w, "\nwhy: this session did not profile its first bad commit (--no-explain, or a perfbisect before explain): perfbisect explain %.10s~1 %.10s with the session's flags says why it is slower\n", *d.FirstBad, *d.FirstBad)
	}
	writeHowMeasured(w, md, howMeasured(p), optionsOf(p.Options, d.Good))
	return nil
}

// writeBisectAnswer writes the answer's lines: the outcome with the first
// bad commit (or the range), git bisect's line, why, and the error.
func writeBisectAnswer(w io.Writer, md bool, d *Document) {
	answer := d.Answer()
	switch {
	case d.FirstBad != nil:
		answer += fmt.Sprintf(": %s %s", *d.FirstBad, d.Subject)
	case len(d.Range) > 0:
		answer += ": " + strings.Join(d.Range, " ")
	}
	answer = strings.TrimSpace(answer)
	esc := func(s string) string { return s }
	if md {
		esc = mdEscape
		fmt.Fprintf(w, "### perfbisect: %s\n\n", mdEscape(answer))
	} else {
		fmt.Fprintf(w, "%s\n", answer)
	}
	if d.FirstBad != nil {
		word := "bad"
		if d.Improvement {
			word = "new"
		}
		if md {
			fmt.Fprintf(w, "```\n%s is the first %s commit\n```\n\n", *d.FirstBad, word)
		} else {
			fmt.Fprintf(w, "%s is the first %s commit\n", *d.FirstBad, word)
		}
	}
	if md {
		fmt.Fprintf(w, "%s\n\n", esc(d.Why))
	} else {
		fmt.Fprintf(w, "%s\n", d.Why)
	}
	if line := d.ReleasesLine(); line != "" {
		if md {
			fmt.Fprintf(w, "%s\n\n", esc(line))
		} else {
			fmt.Fprintf(w, "%s\n", line)
		}
	}
	if d.Error != "" {
		fmt.Fprintf(w, "error: %s\n", esc(d.Error))
	}
}

// writeEndpoints writes the endpoints' medians and their change with its
// interval, when both were measured.
func writeEndpoints(w io.Writer, md bool, d *Document) {
	metric := session.Metric(d.Metric)
	good, bad := d.tested(d.Good), d.tested(d.Bad)
	if good == nil || bad == nil {
		return
	}
	g, b := usable(good.Runs, metric), usable(bad.Runs, metric)
	sh := stats.Shift(g, b, 0.95)
	line := fmt.Sprintf("%s: good %.10s %s, bad %.10s %s; change %s (n=%d+%d)",
		d.Metric, d.Good, medianText(g), d.Bad, medianText(b), shiftText(sh), len(g), len(b))
	if md {
		fmt.Fprintf(w, "**Endpoints.** %s\n\n", mdEscape(line))
	} else {
		fmt.Fprintf(w, "\n%s\n", line)
	}
}

// writeTested writes every tested commit against the good runs of its own
// blocks, oldest first, and the decisions with their rules.
func writeTested(w io.Writer, md bool, d *Document) {
	metric := session.Metric(d.Metric)
	var goodRuns []bisect.Run
	if good := d.tested(d.Good); good != nil {
		goodRuns = good.Runs
	}
	tested := append([]TestedCommit(nil), d.Tested...)
	sort.SliceStable(tested, func(i, j int) bool { return posOf(tested[i]) < posOf(tested[j]) })
	head := []string{"commit", "subject", "verdict", "n", "median " + metric.Label(), "change vs good in its blocks [95%]"}
	var rows [][]string
	for _, t := range tested {
		change := blockChange(d, goodRuns, t, metric)
		rows = append(rows, []string{fmt.Sprintf("%.10s", t.Commit), trunc(t.Subject, 40), t.Verdict, fmt.Sprint(len(t.Runs)), num(t.Median), change})
	}
	if md {
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, r := range rows {
			r[0] = "`" + r[0] + "`"
			for i := range r {
				r[i] = mdEscape(r[i])
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		}
		fmt.Fprintf(w, "\n| decision | commit | verdict | rule |\n|---|---|---|---|\n")
		for _, s := range d.Steps {
			fmt.Fprintf(w, "| %s | `%.10s` | %s | %s |\n", s.Role, s.Commit, s.Verdict, mdEscape(s.Rule))
		}
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\n", strings.Join(head, "\t"))
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\n", strings.Join(r, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "decision\tcommit\tverdict\trule\n")
	for _, s := range d.Steps {
		fmt.Fprintf(tw, "%s\t%.10s\t%s\t%s\n", s.Role, s.Commit, s.Verdict, trunc(s.Rule, 120))
	}
	tw.Flush()
}

// howMeasured is the report's "how it was measured" lines (name, value):
// the command, workload, server, builds, host, runs and the commits left
// out.
func howMeasured(p Page) [][2]string {
	d := p.Bisect
	var ctx [][2]string
	if p.Command != "" {
		ctx = append(ctx, [2]string{"command", p.Command})
	}
	if d.Workload != "" {
		ctx = append(ctx, [2]string{"workload", d.Workload})
	}
	var all []bisect.Run
	for _, t := range d.Tested {
		all = append(all, t.Runs...)
	}
	facts := map[string]string{}
	for _, kv := range hostFacts(all, "") { // distinct values joined with " | "
		facts[kv[0]] = kv[1]
	}
	if v := facts["server"]; v != "" {
		ctx = append(ctx, [2]string{"server", v})
	}
	if b := buildsText(p.Builds); b != "" {
		ctx = append(ctx, [2]string{"builds", b})
	}
	if l := layoutsOf(all); l != "" {
		ctx = append(ctx, [2]string{"code layouts", l})
	}
	var host []string
	for _, k := range reportHostFacts {
		if v := facts[k]; v != "" {
			host = append(host, k+"="+v)
		}
	}
	if len(host) > 0 {
		ctx = append(ctx, [2]string{"host", strings.Join(host, " ")})
	}
	ctx = append(ctx, [2]string{"runs", fmt.Sprintf("%d measured; pre-flight estimate: %s", d.Runs, orDash(d.Estimate))})
	if dd := disturbedOf(all); dd != nil {
		ctx = append(ctx, [2]string{"disturbed", dd.String()})
	}
	if n := len(d.LeftOut); n > 0 {
		what := fmt.Sprintf("%d commits that change", n)
		if n == 1 {
			what = "1 commit that changes"
		}
		ctx = append(ctx, [2]string{"left out", fmt.Sprintf("%s only documentation, tests or CI files (%.10s: %s, ...): they build their parent's server; --keep-doc-commits tests them",
			what, d.LeftOut[0].Commit, d.LeftOut[0].Changes)})
	}
	return ctx
}

// writeHowMeasured writes the "how it was measured" lines and the good
// endpoint's server options.
func writeHowMeasured(w io.Writer, md bool, ctx [][2]string, options string) {
	if md {
		fmt.Fprintf(w, "\n**How it was measured**\n\n")
		for _, kv := range ctx {
			fmt.Fprintf(w, "- %s: %s\n", kv[0], mdEscape(kv[1]))
		}
		if options != "" {
			fmt.Fprintf(w, "\n<details><summary>server options (the good endpoint's; secrets redacted)</summary>\n\n```\n%s\n```\n</details>\n", options)
		}
		return
	}
	fmt.Fprintf(w, "\nhow it was measured:\n")
	for _, kv := range ctx {
		fmt.Fprintf(w, "  %s: %s\n", kv[0], kv[1])
	}
	if options != "" {
		fmt.Fprintf(w, "  server options (the good endpoint's; secrets redacted):\n")
		for _, l := range strings.Split(options, "\n") {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
}

// blockChange is commit t's change against the good runs of its own blocks
// (goodInBlocks), with its 95% interval and how many good runs it was taken
// against: "-12.3% [-15.0%, -9.1%] (against 9 good runs)"; "-" for the good
// endpoint and a commit without usable runs.
func blockChange(d *Document, goodRuns []bisect.Run, t TestedCommit, metric session.Metric) string {
	if t.Commit == d.Good || len(t.Runs) == 0 {
		return "-"
	}
	refs := usable(goodInBlocks(goodRuns, t.Runs), metric)
	v := usable(t.Runs, metric)
	if len(refs) == 0 || len(v) == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (against %d good runs)", shiftText(stats.Shift(refs, v, 0.95)), len(refs))
}

// tested is the tested entry of commit h, or nil.
func (d *Document) tested(h string) *TestedCommit {
	for i := range d.Tested {
		if d.Tested[i].Commit == h {
			return &d.Tested[i]
		}
	}
	return nil
}

// posOf orders tested commits by their place in the range (unknown last).
func posOf(t TestedCommit) int {
	if t.Position == nil {
		return math.MaxInt
	}
	return *t.Position
}

// goodInBlocks are the good runs measured in the blocks of runs: from the
// last good run before runs' first to the first good run after their last
// (all of good when runs have no start times).
func goodInBlocks(good, runs []bisect.Run) []bisect.Run {
	var first, last time.Time
	for _, r := range runs {
		if r.Started.IsZero() {
			return good
		}
		if first.IsZero() || r.Started.Before(first) {
			first = r.Started
		}
		if r.Started.After(last) {
			last = r.Started
		}
	}
	sorted := append([]bisect.Run(nil), good...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Started.Before(sorted[j].Started) })
	lo, hi := 0, len(sorted)
	for i, g := range sorted {
		if g.Started.Before(first) {
			lo = i
		}
		if g.Started.After(last) {
			hi = i + 1
			break
		}
	}
	if lo >= hi {
		return good
	}
	return sorted[lo:hi]
}

// medianText is "median [lo, hi]" at 95% (the interval left out when the
// runs are too few for one).
func medianText(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	m := stats.Median(xs)
	if lo, hi, ok := stats.MedianCI(xs, 0.95); ok {
		return fmt.Sprintf("%s [%s, %s]", num(m), num(lo), num(hi))
	}
	return num(m)
}

// shiftText is "-12.3% [-15.0%, -9.1%]".
func shiftText(s stats.ShiftEstimate) string {
	if math.IsNaN(s.Est) {
		return "-"
	}
	if !s.Bounded() {
		return fmt.Sprintf("%+.1f%%", 100*s.Est)
	}
	return fmt.Sprintf("%+.1f%% [%+.1f%%, %+.1f%%]", 100*s.Est, 100*s.Lo, 100*s.Hi)
}

// buildsText summarises the build attempts: "3 (1 failed), 2 from the
// build cache, tree MariaDB 10.11.99".
func buildsText(builds []BuildFact) string {
	if len(builds) == 0 {
		return ""
	}
	var version string
	stored := make([]store.Build, len(builds))
	for i, b := range builds {
		stored[i] = store.Build{Seconds: b.Seconds, Error: b.Error, Cached: b.Cached}
		if version == "" && b.Version != "" {
			version = strings.TrimSpace(b.Flavor + " " + b.Version)
		}
	}
	s := buildCount(stored, false)
	if version != "" {
		s += ", tree " + version
	}
	return s
}

// optionsOf is the effective options of commit (else of the first measured
// commit), secret values redacted.
func optionsOf(opts []OptionsText, commit string) string {
	for _, o := range opts {
		if o.Commit == commit {
			return RedactOptions(strings.TrimSpace(o.Text))
		}
	}
	if len(opts) > 0 {
		return RedactOptions(strings.TrimSpace(opts[0].Text))
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// buildCount says how many revisions a session built, how many of those
// failed (and, with seconds, the time they took) and how many installs it
// took from the build cache: "3 (1 failed, 1520s in all), 2 from the build
// cache". An install found in the cache is not a build: a resumed session
// finds its endpoints there.
func buildCount(builds []store.Build, seconds bool) string {
	built, failed, cached := 0, 0, 0
	var secs float64
	for _, b := range builds {
		if b.Cached {
			cached++
		} else {
			built++
			secs += b.Seconds
		}
		if b.Error != "" { // an install from the cache can fail to be found usable
			failed++
		}
	}
	s := fmt.Sprintf("%d (%d failed)", built, failed)
	if seconds {
		s = fmt.Sprintf("%d (%d failed, %.0fs in all)", built, failed, secs)
	}
	if built == 0 && cached > 0 {
		s = "none built"
	}
	if cached > 0 {
		s += fmt.Sprintf(", %d from the build cache", cached)
	}
	return s
}
