package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/pprof/profile"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/explain"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/internal/cliflag"
	"github.com/perfbisect/perfbisect/serverctl"
)

// ExplainRequest is an explanation of why the second side is slower than
// the first (sides as compare takes them): Runs profiled runs of each,
// interleaved, their profiles and run files written into Out (a directory
// that must not exist or be empty).
type ExplainRequest struct {
	Sides     []string
	Runs      int    // profiled runs a side, 2 or more
	CallGraph string // one of explain.CallGraphs
	Out       string // "": perfbisect-explain (-2, -3, ...: the first that does not exist)
	StateDir  string // "" for the repository's default
}

// Explain profiles both sides, interleaved, in runs of their own (they
// never decide a verdict), and explains the difference (explain.Explain).
// Where perf cannot profile, it says why and explains with the counters
// and settings alone. When the servers' settings differ, the head is
// measured again with the base's values pinned (pinSettings). Errors:
// usage for sides or an output directory that cannot be used;
// interruption (with the document when only the pinned measurement was
// interrupted: write it); failure.
func Explain(ctx context.Context, su *Setup, req ExplainRequest) (*report.ExplainDoc, error) {
	if len(req.Sides) != 2 {
		return nil, usageError("explain takes two sides, the base then the slower one (got %s): "+sideForm, Counted(len(req.Sides), "argument"))
	}
	if !slices.Contains(explain.CallGraphs, req.CallGraph) {
		return nil, usageError("{call-graph} %q: want %s", req.CallGraph, strings.Join(explain.CallGraphs, " or "))
	}
	if req.Runs < 2 {
		return nil, usageError("{runs} %d: at least 2 runs a side are needed for an interval", req.Runs)
	}
	sides, err := ResolveSides(ctx, su, req.Sides)
	if err != nil {
		return nil, err
	}
	if err := su.checkSides(sides); err != nil {
		return nil, err
	}
	if err := askInstalled(ctx, sides); err != nil {
		return nil, err
	}
	if req.Out == "" {
		req.Out = newDir("perfbisect-explain")
	}
	if abs, err := filepath.Abs(req.Out); err == nil {
		req.Out = abs // the report names the profiles wherever it is read
	}
	if err := su.Lock(req.StateDir); err != nil {
		return nil, err
	}
	if err := emptyDir(req.Out); err != nil {
		return nil, err
	}
	su.useSides(sides)
	doc, err := profiled(ctx, su, [2]Side{sides[0], sides[1]}, req.Runs, req.CallGraph, req.Out)
	if err != nil {
		// It was new or empty: emptied again, nothing of the user's is
		// lost, and the same command can run again.
		if entries, rerr := os.ReadDir(req.Out); rerr == nil {
			for _, e := range entries {
				_ = os.RemoveAll(filepath.Join(req.Out, e.Name()))
			}
		}
		return nil, err
	}
	if sides[0].Tree == "" && sides[1].Tree == "" && sides[0].Install == nil && sides[1].Install == nil {
		tieToFiles(su, doc, sides[0].Spec.Commit, sides[1].Spec.Commit) // two revisions of --repo
	}
	if err := pinSettings(ctx, su, sides[0], sides[1], req.Runs, req.Out, doc); err != nil {
		// The explanation stands: the pinned measurement's failure is said
		// with it, and an interruption is returned with it.
		doc.Pinned = &report.PinnedDoc{Error: err.Error()}
		if ctx.Err() != nil {
			doc.Pinned.Error = "interrupted"
			return doc, err
		}
	}
	return doc, nil
}

// profiled measures runs profiled runs of each side, interleaved, into
// out (an empty directory), and explains them; su is locked and knows the
// sides (useSides, or plain commits of its repository). The measurer is
// one of its own: what a profiler costs never reaches a verdict's runs.
func profiled(ctx context.Context, su *Setup, sides [2]Side, runs int, callGraph, out string) (*report.ExplainDoc, error) {
	res := &report.ExplainDoc{Workload: su.Workload.Summary()}
	if err := explain.Check(); err != nil {
		res.NoPerf = err.Error()
		fmt.Fprintf(su.Log, "note: %v: explaining with the server's counters and settings alone\n", err)
	}
	prof := &explain.Profiler{Dir: filepath.Join(out, "runs"), CallGraph: callGraph, NoPerf: res.NoPerf != "",
		Names: map[string]string{sides[0].Key: "base", sides[1].Key: "head"}}
	defer prof.Clean()
	probeSettings := serverctl.WaitSettings
	if !su.Workload.ClientInProcess() {
		// sysbench cannot time its statements: the server's digests can,
		// those it is sent as text.
		prof.Digests = true
		probeSettings = append(slices.Clone(probeSettings), serverctl.DigestSettings...)
	}
	su.Probe, su.Statements, su.ProbeSettings = prof.Probe, true, probeSettings
	defer func() { su.Probe, su.Statements, su.ProbeSettings = nil, false, nil }()
	m := su.Measurer(func() int64 { return 0 })
	var measured [2][]bisect.Run
	for i := 0; i < runs; i++ {
		for s, sd := range sides {
			r, err := m.Measure(ctx, sd.Key, 1)
			if err != nil {
				return nil, explainError(ctx, sd, err)
			}
			measured[s] = append(measured[s], r...)
		}
	}
	var data [2][]explain.Run
	var merged [2][]*profile.Profile
	if !prof.NoPerf {
		// perf script's unwinding takes the CPU: never in another
		// perfbisect's measured window.
		unlock, err := measure.MachineLock(ctx, "converting profiles", su.StateDir, su.Log)
		if err != nil {
			return nil, explainError(ctx, sides[0], err)
		}
		defer unlock()
	}
	for s := range sides {
		for _, r := range measured[s] {
			res.Seconds += r.Wall.Seconds()
			dir := r.Facts[measure.ProbeFact]
			er, err := explain.ReadRun(dir)
			if err != nil {
				return nil, With(Failure, fmt.Errorf("profiled run of %s: %w", sides[s].Describe(), err))
			}
			er.Events, er.TPS, er.CPUPerTxn = r.Events, r.TPS, float64(r.CPUPerTxn.Microseconds())
			if !prof.NoPerf {
				if er.Profile, err = prof.Samples(ctx, dir); err != nil {
					return nil, With(Failure, err)
				}
				per, err := explain.PerTransaction(er.Profile, r.Events, len(measured[s]))
				if err != nil {
					return nil, With(Failure, err)
				}
				merged[s] = append(merged[s], per)
				_ = os.Remove(filepath.Join(dir, explain.PerfData)) // the profile keeps what was in it
			}
			data[s] = append(data[s], er)
		}
	}
	res.Explanation = explain.Explain(sides[0].Describe(), sides[1].Describe(), data[0], data[1], explain.Options{})
	if !prof.NoPerf {
		var err error
		for s, path := range map[int]*string{0: &res.BaseProfile, 1: &res.HeadProfile} {
			if *path, err = writeProfile(filepath.Join(out, []string{"base.pb.gz", "head.pb.gz"}[s]), merged[s]); err != nil {
				return nil, With(Failure, err)
			}
		}
	}
	return res, nil
}

// explainError is how a profiled run's failure ends explain.
func explainError(ctx context.Context, sd Side, err error) error {
	var ue *bisect.UntestableError
	switch {
	case ctx.Err() != nil:
		return With(Interrupted, errors.New("interrupted; no server left running"))
	case errors.Is(err, explain.ErrNoPerf):
		return With(Failure, fmt.Errorf("%w (the machine's, not the revision's)", err))
	case errors.As(err, &ue), errors.Is(err, serverctl.ErrOptionFile), errors.Is(err, bisect.ErrUsage):
		return With(Usage, fmt.Errorf("side %s cannot be measured: %w", sd.Describe(), err))
	}
	return With(Failure, err)
}

// newDir is the first of name, name-2, name-3 ... that does not exist or
// is an empty directory.
func newDir(name string) string {
	for i := 2; ; i++ {
		if _, err := os.Lstat(name); errors.Is(err, os.ErrNotExist) {
			return name
		}
		if entries, err := os.ReadDir(name); err == nil && len(entries) == 0 {
			return name
		}
		name = fmt.Sprintf("%s-%d", strings.TrimSuffix(name, fmt.Sprintf("-%d", i-1)), i)
	}
}

// emptyDir makes dir, or takes it when it is an empty directory: nothing
// of the user's is overwritten. Errors (usage): it is a file or holds one.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return usageError("{out} %s: %v", dir, err)
		}
		return nil
	case err != nil:
		return usageError("{out} %s: %v (give a new or empty directory)", dir, err)
	case len(entries) > 0:
		return usageError("{out} %s is not empty: give a new or empty directory (nothing in it is overwritten)", dir)
	}
	return nil
}

// writeProfile merges a side's run profiles into one and writes it in
// pprof's format (gzipped protocol buffer) to path, returned.
func writeProfile(path string, ps []*profile.Profile) (string, error) {
	p, err := profile.Merge(ps)
	if err != nil {
		return "", fmt.Errorf("merge profiles: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := p.Write(f); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

// explainCulprit explains a named first bad commit against the parent it
// was confirmed against (its first parent, or the commit before it that
// the search measured: explainAfter); nil when nothing is to be explained.
func explainCulprit(ctx context.Context, su *Setup, res *session.Result, runs int, args []string) *report.ExplainDoc {
	if runs < 0 || res.Outcome != session.Found || res.Improvement {
		return nil
	}
	c, err := su.Repo.CommitObject(plumbing.NewHash(res.FirstBad))
	if err != nil || c.NumParents() == 0 {
		return nil
	}
	parent := c.ParentHashes[0].String()
	for _, st := range res.Steps {
		// The commit the answer put it head to head with, which it calls
		// its parent: the first parent, or the commit before it the search
		// measured (the documentation-only ones between left out).
		if st.Role == session.RoleConfirm && st.Commit == res.FirstBad && st.Against != "" {
			parent = st.Against
		}
	}
	side := func(name, h string) Side {
		return Side{Arg: name, Key: h, Repo: su.Repo, Spec: measure.Side{Commit: h, OptionFile: su.OptionFile}}
	}
	doc := explainAfter(ctx, su, side("parent", parent), side("first bad commit", res.FirstBad), runs, res.Measured,
		explainCommandLine(args, parent[:10], res.FirstBad[:10], 0))
	if doc != nil && doc.Note == "" {
		tieToFiles(su, doc, parent, res.FirstBad)
	}
	return doc
}

// explainAfter explains why head is slower than base once an answer said
// so: runs profiled runs of each (0: as many as a tenth of spent, the
// answer's runs, allows, at most 3), in the state directory's
// explain/BASE-HEAD. With room for fewer than 2 a side, or on a failure,
// the document is a note with cmd, the command that explains it; the
// answer stands either way. When the two servers' settings differ, the
// head is measured again with the base's values pinned (pinSettings).
func explainAfter(ctx context.Context, su *Setup, base, head Side, runs, spent int, cmd string) *report.ExplainDoc {
	why := "as many as --explain-runs says"
	if runs == 0 {
		runs, why = min(3, spent/20), "a tenth of the runs"
	}
	if runs < 2 {
		return &report.ExplainDoc{Note: "a tenth of the runs leaves no room for 2 profiled runs a side; for why it is slower, run: " + cmd}
	}
	out := filepath.Join(su.StateDir, "explain", fmt.Sprintf("%.10s-%.10s", strings.TrimPrefix(base.Key, "side-"), strings.TrimPrefix(head.Key, "side-")))
	if err := os.RemoveAll(out); err != nil {
		return &report.ExplainDoc{Note: err.Error()}
	}
	if err := os.MkdirAll(out, 0o700); err != nil {
		return &report.ExplainDoc{Note: err.Error()}
	}
	fmt.Fprintf(su.Log, "why: %d profiled runs each of %s and %s (%s; they decide nothing; --no-explain skips them)\n",
		runs, head.Describe(), base.Describe(), why)
	doc, err := profiled(ctx, su, [2]Side{base, head}, runs, "", out)
	switch {
	case ctx.Err() != nil:
		return &report.ExplainDoc{Note: "interrupted before it was done; run: " + cmd}
	case err != nil:
		fmt.Fprintf(su.Log, "note: why: %v\n", err)
		return &report.ExplainDoc{Note: fmt.Sprintf("the profiled runs failed (%v); run: %s", err, cmd)}
	}
	// A default the head's server changed is the cheapest cause to
	// confirm: the same pinning as explain's (runs more of each of three).
	if err := pinSettings(ctx, su, base, head, runs, out, doc); err != nil {
		doc.Pinned = &report.PinnedDoc{Error: err.Error()}
		if ctx.Err() != nil {
			doc.Pinned.Error = "interrupted; run: " + cmd
		}
	}
	return doc
}

// sourceExts are the file names whose functions a profile can name.
var sourceExts = []string{".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".ic", ".ih", ".inl", ".i"}

// tieToFiles adds to doc the files that changed from commit a to b (C and
// C++ sources, their content at b) holding the explanation's functions
// (explain.Files). Nothing is added when the trees cannot be read.
func tieToFiles(su *Setup, doc *report.ExplainDoc, a, b string) {
	if su.Repo == nil || len(doc.Functions) == 0 {
		return
	}
	paths, err := bisect.ChangedPaths(su.Repo, a, b)
	if err != nil {
		return
	}
	c, err := su.Repo.CommitObject(plumbing.NewHash(b))
	if err != nil {
		return
	}
	tb, err := c.Tree()
	if err != nil {
		return
	}
	contents := map[string]string{}
	for _, name := range paths {
		if !slices.Contains(sourceExts, strings.ToLower(filepath.Ext(name))) {
			continue
		}
		f, err := tb.File(name) // a path deleted at b has none
		if err != nil || f.Size > 4<<20 {
			continue
		}
		if text, err := f.Contents(); err == nil {
			contents[name] = text
		}
	}
	doc.Files = explain.Files(doc.Explanation, contents)
}

// notForExplain are the flags of start and compare that explain does not
// take (revisions, decisions, reports); boolFlags are the flags that take
// no value.
var (
	notForExplain = []string{"good", "bad", "old", "new", "json", "html", "output", "format", "no-confirm", "first-parent",
		"keep-doc-commits", "jobs", "search", "max-runs", "no-explain", "confidence", "max-repeats", "repeats", "threshold",
		"metric", "find", "thread-list", "which-setting", "threads"}
	boolFlags = []string{"no-confirm", "first-parent", "keep-doc-commits", "no-explain", "which-setting", "quiet", "verbose",
		"fresh-datadir", "no-ccache", "retry-failed-builds"}
)

// explainCommandLine is the perfbisect explain command that explains head
// against base with the measurement flags of args (a start or compare
// command line as typed, its command name first), at threads client
// threads (0: as args say).
func explainCommandLine(args []string, base, head string, threads int) string {
	out := []string{"perfbisect", "explain", cliflag.ShellQuote(base), cliflag.ShellQuote(head)}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue // a side of compare
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "explain-runs" { // start's: explain's own --runs
			a = "--runs"
			if hasValue {
				a += "=" + value
			}
		}
		takesValue := !hasValue && !slices.Contains(boolFlags, name)
		keep := !slices.Contains(notForExplain, name) || name == "threads" && threads == 0
		if keep {
			out = append(out, cliflag.ShellQuote(a))
		}
		if takesValue && i+1 < len(args) {
			i++
			if keep {
				out = append(out, cliflag.ShellQuote(args[i]))
			}
		}
	}
	if threads > 0 {
		out = append(out, "--threads", fmt.Sprint(threads))
	}
	return strings.Join(out, " ")
}
