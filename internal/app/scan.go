package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/scan"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/stats"
)

// ScanRequest is a scan of the first-parent line from From to To (as typed):
// every Every-th commit (or the merges), Runs runs each, for the steps of
// the series (change points). Range is the range as the user wrote it, for
// messages; each change found carries the perfbisect start command that
// bisects it (with StartFlags).
type ScanRequest struct {
	Range    string // FROM..TO
	Every    int
	EverySet bool // Every was given (it and Merges exclude each other)
	Merges   bool
	Runs     int
	StateDir string
	Args     []string
	// StartFlags are the measurement flags the scan was given, as perfbisect
	// start takes them (quoted for a shell), for the command that bisects
	// each change found.
	StartFlags []string
}

// Check refuses, as a usage error naming the setting, a range that is not
// FROM..TO with both ends, Every below 1, Runs outside 1..100, and Every
// given with Merges.
func (req ScanRequest) Check() error {
	fromRef, toRef, _ := strings.Cut(req.Range, "..")
	switch {
	case fromRef == "" || toRef == "" || strings.HasPrefix(toRef, "."):
		return usageError("range %q: want FROM..TO with both ends (two dots)", req.Range)
	case req.Every < 1 || req.Runs < 1 || req.Runs > 100:
		return usageError("{every} %d, {runs} %d: want {every} >= 1 and 1 <= {runs} <= 100", req.Every, req.Runs)
	case req.EverySet && req.Merges:
		return usageError("{every} and {merges}: choose one")
	}
	return nil
}

// Scan measures the picked commits and finds the change points of their
// series. It returns the document (nil when the input was refused before
// any measurement; without points when nothing was measured), its stored
// session id, and the outcome as an error:
// nil, Answer(Regression) when a change is a regression, a usage error
// (the range, too few commits, too few measured), an interruption, or a
// failure.
func Scan(ctx context.Context, su *Setup, req ScanRequest) (*report.ScanDoc, int64, error) {
	if err := req.Check(); err != nil {
		return nil, 0, err
	}
	from, to, line, err := scanLine(su, req.Range)
	if err != nil {
		return nil, 0, err
	}
	picked := scan.Pick(line, req.Every, req.Merges)
	if need := 2 * stats.DefaultChangePointMinSegment; len(picked) < need {
		return nil, 0, bisect.Usagef("range %s: %d commits to measure, and change-point detection needs %d on each side of a shift (%d in all): a longer range or a smaller --every",
			req.Range, len(picked), stats.DefaultChangePointMinSegment, need)
	}
	if err := su.Lock(req.StateDir); err != nil {
		return nil, 0, err
	}
	var points []string
	for _, p := range picked {
		points = append(points, p.Hash)
	}
	if err := su.CheckSettings(append([]string{from, to}, points...)...); err != nil {
		return nil, 0, err
	}
	metric := su.Policy.Metric
	fmt.Fprintf(su.Log, "scanning %d of %d commits from %.10s to %.10s, %d runs each; state in %s\n", len(points), len(line), from, to, req.Runs, su.StateDir)
	identity := scanIdentity(su, from, to, req.Every, req.Merges, req.Runs)
	dir, _ := os.Getwd()
	sess, err := su.Begin(store.KindScan, req.Args, dir, from, to, identity)
	if err != nil {
		return nil, 0, With(Failure, err)
	}
	meas := su.Measurer(func() int64 { return sess.ID })
	var m bisect.Measurer = meas
	if su.Live != nil {
		su.Live.Estimate(len(points) * req.Runs)
		m = liveMeasurer{meas, su.Live}
	}
	res, err := scan.Scan(ctx, m, points, req.Runs, metric, stats.ChangePointOptions{MinMagnitude: su.Policy.Threshold})
	if err == nil {
		err = enoughPoints(res, len(points))
	}
	doc := scanDocument(su, req, from, to, res)
	state, outcome := store.Done, "no-change"
	switch {
	case err != nil:
		state, outcome = store.Failed, "error"
	case len(res.Changes) > 0:
		outcome = "changes"
	}
	if eerr := su.Store.End(sess.ID, state, outcome, doc); eerr != nil {
		fmt.Fprintf(os.Stderr, "perfbisect: %v\n", eerr)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return doc, sess.ID, With(Interrupted, errors.New("interrupted; no server left running"))
	case err != nil:
		return doc, sess.ID, With(OutcomeOf(err), err)
	}
	for _, ch := range res.Changes {
		if ch.Regression {
			return doc, sess.ID, Answer(Regression)
		}
	}
	return doc, sess.ID, nil
}

// scanLine resolves a scan's range FROM..TO and returns its first-parent
// line. Errors: usage for ends that do not resolve, are one commit, or are
// not FROM an ancestor of TO; git's failure.
func scanLine(su *Setup, rng string) (from, to string, line []bisect.Commit, err error) {
	fromRef, toRef, _ := strings.Cut(rng, "..")
	if from, err = bisect.Resolve(su.Repo, fromRef); err != nil {
		return "", "", nil, With(Usage, fmt.Errorf("FROM: %w", err))
	}
	if to, err = bisect.Resolve(su.Repo, toRef); err != nil {
		return "", "", nil, With(Usage, fmt.Errorf("TO: %w", err))
	}
	if from == to {
		return "", "", nil, bisect.Usagef("range %s: FROM and TO are the same commit", rng)
	}
	commits, err := bisect.Range(su.Repo, from, to)
	if err != nil {
		if errors.Is(err, bisect.ErrUsage) {
			why := "they are on different branches"
			if _, rerr := bisect.Range(su.Repo, to, from); rerr == nil {
				why = "TO is older than FROM: swap them"
			}
			return "", "", nil, bisect.Usagef("range %s: FROM must be an ancestor of TO (%s)", rng, why)
		}
		return "", "", nil, With(Failure, err)
	}
	if line, err = scan.FirstParentLine(commits, from, to); err != nil {
		return "", "", nil, With(Usage, err)
	}
	return from, to, line, nil
}

// enoughPoints fails a scan that could measure fewer than two of its points.
func enoughPoints(res *scan.Result, points int) error {
	measured := 0
	if res != nil {
		for _, p := range res.Points {
			if p.Skip == "" {
				measured++
			}
		}
	}
	if measured < 2 {
		return bisect.Usagef("%d of %d commits could be measured (see the skips above): no series to scan", measured, points)
	}
	return nil
}

// scanDocument is a scan's document: every point measured, and each change
// found with the perfbisect start command that bisects it.
func scanDocument(su *Setup, req ScanRequest, from, to string, res *scan.Result) *report.ScanDoc {
	doc := &report.ScanDoc{From: from, To: to, Metric: string(su.Policy.Metric), Threshold: su.Policy.Threshold, Changes: []report.ScanChange{}}
	if res == nil {
		return doc
	}
	for _, p := range res.Points {
		sp := report.ScanPoint{Commit: p.Commit, Subject: bisect.Subject(su.Repo, p.Commit), Values: p.Values, Skip: p.Skip}
		if sp.Values == nil {
			sp.Values = []float64{}
		}
		if p.Skip == "" && len(p.Values) > 0 {
			sp.Median = stats.Median(p.Values)
		}
		doc.Points = append(doc.Points, sp)
	}
	for _, ch := range res.Changes {
		doc.Changes = append(doc.Changes, report.ScanChange{Change: ch, Start: bisectCommandFor(ch, req.StartFlags)})
	}
	return doc
}

// liveMeasurer counts a scan's runs on the live progress (a bisection's runs
// are counted as the session records them).
type liveMeasurer struct {
	*measure.Measurer
	live Live
}

// Measure measures as the wrapped Measurer and counts the runs it returns.
func (l liveMeasurer) Measure(ctx context.Context, commit string, runs int) ([]bisect.Run, error) {
	out, err := l.Measurer.Measure(ctx, commit, runs)
	for range out {
		l.live.Run(commit)
	}
	return out, err
}

// bisectCommandFor is the perfbisect start command that bisects a change, with
// the measurement flags the scan was given (an improvement with --find
// improvement and git bisect's old/new terms).
func bisectCommandFor(ch scan.Change, flags []string) string {
	ends := fmt.Sprintf("--good %.12s --bad %.12s", ch.Good, ch.Bad)
	if !ch.Regression {
		ends = fmt.Sprintf("--find improvement --old %.12s --new %.12s", ch.Good, ch.Bad)
	}
	return strings.TrimSpace("perfbisect start " + ends + " " + strings.Join(flags, " "))
}
