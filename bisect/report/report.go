// Package report renders what perfbisect found, in every format it writes
// (text, markdown, JSON, JUnit, HTML): a bisection (the table of tested
// commits printed as it goes, the answer, the bug report), a comparison, a
// setting search, a scan, an explanation, status and log. It measures
// nothing.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/renameio/v2"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/stats"
)

// Subjects maps a full hash to its commit subject line.
type Subjects func(hash string) string

// Table writes the tested-commits table as steps arrive.
type Table struct {
	W        io.Writer
	Subjects Subjects
	Metric   session.Metric
	// Color marks verdicts with ANSI colours (bad red, good green, others
	// yellow): for a terminal only.
	Color  bool
	header bool
}

// verdictColors are the ANSI SGR codes of the verdicts in a coloured table.
var verdictColors = map[string]string{"bad": "31", "confirmed": "31", "good": "32"}

// paint pads verdict to width and colours it when the table is coloured (the
// escape codes go around the padded text, so columns stay aligned).
func (t *Table) paint(verdict string, width int) string {
	v := fmt.Sprintf("%-*s", width, verdict)
	if !t.Color {
		return v
	}
	code, ok := verdictColors[verdict]
	if !ok {
		code = "33"
	}
	return "\x1b[" + code + "m" + v + "\x1b[0m"
}

func (t *Table) row(hash, verdict string, runs []bisect.Run, note string) {
	if !t.header {
		fmt.Fprintf(t.W, "%-10s  %-40s  %3s  %12s  %-9s  %s\n", "commit", "subject", "n", "median "+t.Metric.Label(), "verdict", "evidence")
		t.header = true
	}
	vals := usable(runs, t.Metric)
	med := "-"
	if len(vals) > 0 {
		med = fmt.Sprintf("%.1f", stats.Median(vals))
	}
	fmt.Fprintf(t.W, "%-10.10s  %-40s  %3d  %12s  %s  %s\n", hash, trunc(t.Subjects(hash), 40), len(runs), med, t.paint(verdict, 9), trunc(note, 160))
}

// Step prints the rows for one decision; runs are the session's runs so far.
func (t *Table) Step(st session.Step, runs map[string][]bisect.Run) {
	switch st.Role {
	case session.RoleEndpoints:
		t.row(st.Against, "good", runs[st.Against], "endpoint")
		v := "bad"
		if st.Compare == nil || st.Compare.Verdict != stats.Different {
			v = "?"
		}
		t.row(st.Commit, v, runs[st.Commit], "endpoint: "+st.Reason)
	case session.RoleMidpoint:
		note := st.Reason
		if st.Note != "" {
			note += "; " + st.Note
		}
		t.row(st.Commit, string(st.Verdict), runs[st.Commit], note)
	case session.RoleConfirm:
		v := "confirmed"
		if st.Compare == nil || st.Compare.Verdict != stats.Different {
			v = "not conf."
		}
		t.row(st.Commit, v, runs[st.Commit], fmt.Sprintf("vs parent %.10s: %s", st.Against, st.Reason))
	}
}

// Releases is a bisection's first phase on the vendors' binary tarballs.
type Releases struct {
	Session  int64    `json:"session"`  // its stored session
	Releases []string `json:"releases"` // the releases it searched (their tags), oldest first
	Runs     int      `json:"runs"`
	Outcome  string   `json:"outcome"`
	Good     string   `json:"good"` // the releases it narrowed to (tags)
	Bad      string   `json:"bad"`
}

// ReleasesLine is the line that says a bisection's first phase on the
// vendors' binary tarballs (--binaries): in the first phase's own
// document, what it measured and what the next session does; in the
// second's, what the first found. "" without one.
func (d *Document) ReleasesLine() string {
	r := d.Releases
	if r == nil {
		return ""
	}
	found := r.Good != "" && r.Bad != ""
	if d.Tarballs {
		line := fmt.Sprintf("releases on the vendors' binary tarballs, nothing built: %s", strings.Join(r.Releases, " "))
		if found {
			line += fmt.Sprintf("; the first bad release %s (good: %s) is bisected from source by the next session", r.Bad, r.Good)
		}
		return line
	}
	return fmt.Sprintf("first, the releases on the vendors' binary tarballs (session %d: %s; %d runs, nothing built): first bad release %s (good: %s); then from source between them",
		r.Session, strings.Join(r.Releases, " "), r.Runs, r.Bad, r.Good)
}

// Final writes the answer: "first bad commit: <sha> <subject>" or the range or
// "no regression reproduced", then why.
func Final(w io.Writer, res *session.Result, subjects Subjects) {
	answer := outcomeWords(string(res.Outcome), res.Improvement)
	switch res.Outcome {
	case session.Found:
		fmt.Fprintf(w, "%s: %s %s\n", answer, res.FirstBad, subjects(res.FirstBad))
	case session.Ambiguous:
		fmt.Fprintf(w, "%s:\n", answer)
		for _, h := range res.Range {
			why := ""
			if s, ok := res.Skipped[h]; ok {
				why = "  (skipped: " + s + ")"
			}
			fmt.Fprintf(w, "  %s %s%s\n", h, subjects(h), why)
		}
	case session.NoRegression, session.Undecided:
		fmt.Fprintf(w, "%s\n", answer)
	}
	if res.Why != "" {
		fmt.Fprintf(w, "%s\n", res.Why)
	}
	writePosterior(w, res, subjects)
	if d := disturbedOf(allRuns(res)); d != nil {
		fmt.Fprintf(w, "disturbed: %s\n", d)
	}
	if l := layoutsOf(allRuns(res)); l != "" {
		fmt.Fprintf(w, "code layouts: %s\n", l)
	}
}

// allRuns are the runs of every commit of res.
func allRuns(res *session.Result) []bisect.Run {
	var all []bisect.Run
	for _, rs := range res.Runs {
		all = append(all, rs...)
	}
	return all
}

// writePosterior prints a probabilistic search's posterior: the measured
// commits and any other holding at least 1% of it, oldest first, with the
// probability of being the first bad commit, of being bad, the position
// between good (0) and bad (1) with its interval, and the runs.
func writePosterior(w io.Writer, res *session.Result, subjects Subjects) {
	if len(res.Posterior) == 0 {
		return
	}
	fmt.Fprintf(w, "posterior (oldest first):\n")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  commit\tP(first bad)\tP(bad)\tposition [95%%]\truns\tsubject\n")
	for i := len(res.Posterior) - 1; i >= 0; i-- {
		p := res.Posterior[i]
		if p.Runs == 0 && p.First < 0.01 {
			continue
		}
		pos := "-"
		if !math.IsNaN(p.Position) {
			pos = fmt.Sprintf("%.2f [%.2f, %.2f]", p.Position, p.Lo, p.Hi)
		}
		fmt.Fprintf(tw, "  %.10s\t%.3f\t%.3f\t%s\t%d\t%s\n", p.Commit, p.First, p.Bad, pos, p.Runs, trunc(subjects(p.Commit), 40))
	}
	tw.Flush()
}

// Document is the --json output.
type Document struct {
	Result string `json:"result"` // found, no-regression, ambiguous, undecided; "error" when the session stopped on an error
	Error  string `json:"error,omitempty"`
	Good   string `json:"good,omitempty"` // full hashes of the endpoints (old and new when looking for a speed-up)
	Bad    string `json:"bad,omitempty"`
	// Releases is the first phase of a bisection with --binaries, which
	// narrowed good..bad to two releases on the vendors' binaries (nil:
	// none); Good and Bad are then the second phase's, built from source.
	Releases *Releases `json:"releases,omitempty"`
	// Tarballs marks the first phase itself: its commits are releases,
	// measured on the vendors' binary tarballs (Releases says which).
	Tarballs bool `json:"tarballs,omitempty"`
	// Improvement is set when the session looked for a speed-up (--find
	// improvement, git bisect's old/new terms): FirstBad is then the first new
	// commit.
	Improvement bool `json:"improvement,omitempty"`
	// Commits is the bad endpoint's Position: the number of commits after
	// good up to bad along a linear history; 0 when not known (documents of
	// perfbisect run).
	Commits    int            `json:"commits,omitempty"`
	FirstBad   *string        `json:"first_bad"` // full sha or null
	Subject    string         `json:"subject,omitempty"`
	Range      []string       `json:"range,omitempty"`
	Why        string         `json:"why"`
	Metric     string         `json:"metric"`
	Confidence float64        `json:"confidence"`
	Tested     []TestedCommit `json:"tested"`
	Steps      []StepDoc      `json:"steps"`
	Estimate   string         `json:"estimate,omitempty"`
	// EstimatedRuns is the pre-flight estimate of the session's runs (0: none
	// was made); Runs is what it measured (failed runs included).
	EstimatedRuns int `json:"estimated_runs,omitempty"`
	// EstimatedRunsHigh is the estimate at the top of the noise's 90%
	// interval from the endpoints' runs (0: none).
	EstimatedRunsHigh int `json:"estimated_runs_high,omitempty"`
	// SmallestChange is the smallest relative change (0.05: 5%) the
	// probabilistic search resolves at the endpoints' noise within
	// SmallestChangeRuns runs (0: not estimated).
	SmallestChange     float64   `json:"smallest_change,omitempty"`
	SmallestChangeRuns int       `json:"smallest_change_runs,omitempty"`
	Runs               int       `json:"runs"`
	Finished           time.Time `json:"finished"`
	// Search is the search strategy of a bisection: "bayes" (probabilistic)
	// or "classic"; empty for documents of other commands and of sessions
	// stored before it was recorded.
	Search string `json:"search,omitempty"`
	// Workload is what every run measured, in one line (bench.Workload's
	// Summary: the workload, its options, threads, window, and what ran
	// it); "" in documents of earlier perfbisects.
	Workload string `json:"workload,omitempty"`
	// Posterior is a probabilistic search's posterior at its end: every
	// candidate with runs or a probability of being the first bad commit of
	// at least 0.001, newest first.
	Posterior []PosteriorDoc `json:"posterior,omitempty"`
	// LeftOut are the commits of the range the search did not consider:
	// they change only documentation, tests or CI files (bisect.InertPath),
	// so they build their parent's server.
	LeftOut []LeftOutDoc `json:"left_out,omitempty"`
	// Explain is why the first bad commit is slower than its parent, from
	// profiled runs after the search (nil: not explained).
	Explain *ExplainDoc `json:"explain,omitempty"`
	// Disturbed counts the runs a disturbed machine cost (nil: none).
	Disturbed *DisturbedDoc `json:"disturbed,omitempty"`
}

// LeftOutDoc is a commit a bisection left out of its search.
type LeftOutDoc struct {
	Commit  string `json:"commit"`
	Subject string `json:"subject"`
	Changes string `json:"changes"` // one of the files it changes ("README.md")
	// Verdict is what it is as its parent's server once the first bad
	// commit is known: "good" or "bad" ("" when no commit was named); the
	// log gives it to git bisect so that a replay ends where the session did.
	Verdict string `json:"verdict,omitempty"`
}

// PosteriorDoc is one candidate of a probabilistic search's posterior.
type PosteriorDoc struct {
	Commit  string `json:"commit"`
	Subject string `json:"subject"`
	// Generation is the commit's place after good, as TestedCommit.Position
	// (see Document.Place); null when not known.
	Generation *int `json:"generation,omitempty"`
	// PFirstBad is the posterior probability that it is the first bad
	// commit; PBad that it is bad (the first bad commit is it or an ancestor).
	PFirstBad float64 `json:"p_first_bad"`
	PBad      float64 `json:"p_bad"`
	// Position is where its runs sit between good (0) and bad (1), the median
	// of its drift-corrected runs, with a 95% interval; null without runs.
	Position *float64 `json:"position,omitempty"`
	Lo       *float64 `json:"position_lo,omitempty"`
	Hi       *float64 `json:"position_hi,omitempty"`
	Runs     int      `json:"runs"`
}

// TestedCommit is one measured commit with its runs.
type TestedCommit struct {
	Commit  string `json:"commit"`
	Subject string `json:"subject"`
	Verdict string `json:"verdict"` // good, bad, skip; untested when the session stopped before deciding
	// Position is the commit's generation after good (see Document.Place):
	// 0 for the good endpoint, Document.Commits for the bad one; null when not
	// known.
	Position *int   `json:"position,omitempty"`
	Skipped  string `json:"skipped,omitempty"`
	// Hand is the user's reason when the verdict was given by hand
	// (perfbisect mark, replay): no run stands behind it.
	Hand   string       `json:"hand,omitempty"`
	Median float64      `json:"median"`
	Runs   []bisect.Run `json:"runs"`
}

// StepDoc is one decision in the JSON document.
type StepDoc struct {
	Role    string   `json:"role"`
	Commit  string   `json:"commit"`
	Against string   `json:"against,omitempty"`
	Verdict string   `json:"verdict"`
	Rule    string   `json:"rule"`
	Need    string   `json:"need,omitempty"`
	Note    string   `json:"note,omitempty"`
	Looks   int      `json:"looks"`
	Hand    bool     `json:"hand,omitempty"`  // a verdict given by hand; Rule holds the user's reason
	N       int      `json:"n,omitempty"`     // runs per side (endpoints, confirm) or blocks (midpoint)
	P       *float64 `json:"p,omitempty"`     // two-sided Mann-Whitney U p-value of the decision
	Alpha   *float64 `json:"alpha,omitempty"` // the significance level of the look that decided
	// Medians of the runs the decision used, in the metric's unit.
	MedianOld  *float64 `json:"median_old,omitempty"`  // Against (endpoints, confirm)
	MedianNew  *float64 `json:"median_new,omitempty"`  // Commit (endpoints, confirm)
	MedianGood *float64 `json:"median_good,omitempty"` // midpoint: the good runs of the blocks
	MedianBad  *float64 `json:"median_bad,omitempty"`  // midpoint: the bad runs of the blocks
	MedianCand *float64 `json:"median_candidate,omitempty"`
	MedianMid  *float64 `json:"median_midpoint,omitempty"` // midpoint: per-block (good+bad)/2
	// Shift is the relative change of Commit against Against (-0.4 = 40% lower);
	// ShiftLo and ShiftHi bound it at confidence 1-Alpha, null when too few runs.
	Shift    *float64 `json:"shift,omitempty"`
	ShiftLo  *float64 `json:"shift_lo,omitempty"`
	ShiftHi  *float64 `json:"shift_hi,omitempty"`
	Position *float64 `json:"position,omitempty"` // midpoints: 1 = like good, 0 = like bad
}

// NewDocument builds the JSON document of a result.
func NewDocument(res *session.Result, metric session.Metric, subjects Subjects) Document {
	outcome := string(res.Outcome)
	if outcome == "" {
		outcome = "error"
	}
	d := Document{Result: outcome, Range: res.Range, Why: res.Why, Metric: string(metric),
		Confidence: res.Budget.Confidence, Estimate: res.Estimate, Finished: time.Now().UTC(), Tested: []TestedCommit{}, Steps: []StepDoc{},
		EstimatedRuns: res.EstimatedRuns, EstimatedRunsHigh: res.EstimatedRunsHigh, Runs: res.Measured, Improvement: res.Improvement,
		SmallestChange: res.SmallestChange, SmallestChangeRuns: res.SmallestChangeRuns}
	if res.FirstBad != "" {
		fb := res.FirstBad
		d.FirstBad, d.Subject = &fb, subjects(fb)
	}
	var hashes []string
	for h := range res.Runs {
		hashes = append(hashes, h)
	}
	hand := map[string]string{}
	for _, st := range res.Steps {
		if st.Hand {
			hand[st.Commit] = strings.TrimPrefix(st.Reason, "marked by hand: ")
		}
	}
	for h := range res.Skipped {
		if _, ok := res.Runs[h]; !ok {
			hashes = append(hashes, h)
		}
	}
	for h := range hand {
		_, measured := res.Runs[h]
		if _, skipped := res.Skipped[h]; !measured && !skipped {
			hashes = append(hashes, h)
		}
	}
	// By first run; commits without runs (skipped before any, marked by
	// hand) after them, by hash.
	sort.Slice(hashes, func(i, j int) bool {
		a, b := first(res, hashes[i]), first(res, hashes[j])
		if a.Equal(b) {
			return hashes[i] < hashes[j]
		}
		return a.Before(b)
	})
	for _, h := range hashes {
		vals := usable(res.Runs[h], metric)
		tc := TestedCommit{Commit: h, Subject: subjects(h), Verdict: res.Verdicts[h], Skipped: res.Skipped[h],
			Runs: res.Runs[h], Hand: hand[h]}
		if tc.Runs == nil {
			tc.Runs = []bisect.Run{}
		}
		if tc.Verdict == "" {
			tc.Verdict = "untested" // measured, but the session stopped before deciding
			if tc.Skipped != "" {
				tc.Verdict = "skip"
			}
		}
		if len(vals) > 0 {
			tc.Median = stats.Median(vals)
		}
		d.Tested = append(d.Tested, tc)
	}
	for _, st := range res.Steps {
		sd := StepDoc{Role: string(st.Role), Commit: st.Commit, Against: st.Against, Verdict: string(st.Verdict),
			Rule: st.Reason, Need: st.Need, Note: st.Note, Looks: st.Looks, Hand: st.Hand}
		if c := st.Compare; c != nil {
			sd.N, sd.P, sd.Alpha = c.NNew, ptr(c.P), ptr(c.Alpha)
			sd.MedianOld, sd.MedianNew = ptr(c.MedianOld), ptr(c.MedianNew)
			sh := st.Compare.Shift
			est := sh.Est
			sd.Shift = &est
			if sh.Bounded() {
				lo, hi := sh.Lo, sh.Hi
				sd.ShiftLo, sd.ShiftHi = &lo, &hi
			}
		}
		if c := st.Class; c != nil {
			sd.N, sd.P, sd.Alpha = c.N, ptr(c.P), ptr(c.Alpha)
			sd.MedianGood, sd.MedianBad, sd.MedianCand, sd.MedianMid = ptr(c.MedianGood), ptr(c.MedianBad), ptr(c.MedianCand), ptr(c.MedianMid)
			if pos := st.Class.Position; !math.IsNaN(pos) {
				sd.Position = &pos
			}
		}
		d.Steps = append(d.Steps, sd)
	}
	for _, p := range res.Posterior {
		if p.Runs == 0 && p.First < 0.001 {
			continue
		}
		pd := PosteriorDoc{Commit: p.Commit, Subject: subjects(p.Commit), PFirstBad: p.First, PBad: p.Bad, Runs: p.Runs}
		if !math.IsNaN(p.Position) {
			pd.Position, pd.Lo, pd.Hi = ptr(p.Position), ptr(p.Lo), ptr(p.Hi)
		}
		d.Posterior = append(d.Posterior, pd)
	}
	d.Disturbed = disturbedOf(allRuns(res))
	return d
}

// Place records the endpoints and the range searched (commits as bisect.Range
// lists them, in any order) and gives every tested commit its Position: its
// generation in the range, 0 for good and otherwise 1 + the largest Position of
// its parents in the range (parents outside it count as good), so that along a
// linear history position i is the i-th commit after good.
func (d *Document) Place(good, bad string, commits []bisect.Commit) {
	d.Good, d.Bad, d.Commits = good, bad, len(commits)
	parents := make(map[string][]string, len(commits))
	for _, c := range commits {
		parents[c.Hash] = c.Parents
	}
	gen := map[string]int{good: 0}
	var of func(h string) int
	of = func(h string) int {
		if g, ok := gen[h]; ok {
			return g
		}
		ps, in := parents[h]
		if !in {
			return 0 // outside the range: an ancestor of good
		}
		g := 0
		for _, p := range ps {
			g = max(g, of(p))
		}
		gen[h] = g + 1
		return g + 1
	}
	for i := range d.Tested {
		h := d.Tested[i].Commit
		if _, in := parents[h]; in || h == good {
			p := of(h)
			d.Tested[i].Position = &p
		}
	}
	for i := range d.Posterior {
		if _, in := parents[d.Posterior[i].Commit]; in {
			g := of(d.Posterior[i].Commit)
			d.Posterior[i].Generation = &g
		}
	}
	if _, in := parents[bad]; in {
		d.Commits = of(bad)
	}
}

func ptr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func first(res *session.Result, h string) time.Time {
	if rs := res.Runs[h]; len(rs) > 0 {
		return rs[0].Started
	}
	return time.Unix(1<<40, 0) // after every run
}

// CheckWritable fails early, before any measuring, when the --json file cannot
// be written: its directory is missing or not writable.
func CheckWritable(flag, path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("--%s %s: is a directory (name a file)", flag, path)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".perfbisect-*")
	if err != nil {
		// The temporary file's name means nothing to the user: say what is
		// wrong with the directory.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if os.IsNotExist(err) {
			return fmt.Errorf("--%s %s: directory %s does not exist (create it, or name a file in an existing directory)", flag, path, dir)
		}
		return fmt.Errorf("--%s %s: cannot write in directory %s: %w", flag, path, dir, err)
	}
	tmp.Close()
	return os.Remove(tmp.Name())
}

// WriteJSON writes the document to path atomically (a temporary file renamed
// into place), so an interrupted write never leaves half a file.
func WriteJSON(path string, d Document) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	if err := WriteFile(path, append(b, '\n')); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	return nil
}

// WriteFile writes b to path atomically (a temporary file in the same
// directory renamed into place): a reader never sees half a file. The file
// keeps the mode of the one it replaces; a new one is 0644.
func WriteFile(path string, b []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		mode = st.Mode().Perm()
	}
	// renameio writes a temporary file beside path, fsyncs it and renames it
	// over path: a crash leaves the old file or the new one, never half.
	if err := renameio.WriteFile(path, b, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func trunc(s string, n int) string {
	s = strings.TrimSpace(s)
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// usable returns the metric's values of the runs a decision could use: a run
// whose value is not positive (no transactions in its window) was rejected
// and retried, and is kept as evidence but not in a median.
func usable(runs []bisect.Run, metric session.Metric) []float64 {
	vals := make([]float64, 0, len(runs))
	for _, r := range runs {
		if v := metric.Value(r); v > 0 && !math.IsInf(v, 0) {
			vals = append(vals, v)
		}
	}
	return vals
}

// Answer is the outcome in words, as Final prints it: in git bisect's
// good/bad or old/new terms, "first bad commit", "no regression reproduced",
// "ambiguous: ...", ...
func (d Document) Answer() string { return outcomeWords(d.Result, d.Improvement) }

// outcomeWords is an outcome (session.Outcome, or "error") in words.
func outcomeWords(outcome string, improvement bool) string {
	culprit, change := "the first bad commit", "regression"
	if improvement {
		culprit, change = "the first new commit (the improvement)", "improvement"
	}
	switch outcome {
	case string(session.Found):
		return strings.TrimPrefix(culprit, "the ")
	case string(session.Ambiguous):
		return "ambiguous: " + culprit + " is one of"
	case string(session.NoRegression):
		return "no " + change + " reproduced"
	case string(session.Undecided):
		return "undecided: bad measured worse than good, within the noise at the repeat limit"
	case "error":
		return "stopped on an error"
	}
	return outcome
}
