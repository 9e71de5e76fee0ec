package app

import (
	"context"
	"errors"
	"fmt"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/bisect/runner"
	"io"
	"math"
	"os"
	"strings"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/stats"
)

// StartRequest is one bisection: the endpoints as the user typed them
// (anything bisect.Resolve takes), the search and its settings, and where
// its answer goes. The Setup carries the rest (policy and search, workload,
// build).
type StartRequest struct {
	Good, Bad   string
	NoConfirm   bool
	FirstParent bool
	// KeepDocCommits keeps in the search the commits that change only
	// documentation, tests or CI files (bisect.InertCommits), which are
	// left out by default.
	KeepDocCommits bool
	StateDir       string   // "" for the repository's default
	Args           []string // the command as typed, stored for resume
	// ExplainRuns is how many profiled runs of the first bad commit and
	// its parent explain it once named (start --explain-runs: 2 or more):
	// 0 as many as a tenth of the session's runs allows (at most 3 a
	// side). NoExplain leaves the step out, whatever ExplainRuns says
	// (resume --no-explain of a session started with --explain-runs).
	ExplainRuns int
	NoExplain   bool
	// Resuming: the request is a stored session's command run again by
	// resume, which must not differ from what is stored.
	Resuming bool
	// Marks are verdicts given by hand (perfbisect replay: a git bisect
	// log's marks after its endpoints), stored with the session before it
	// measures (those it already holds are not stored again); one outside
	// the range is left out with a line on the log.
	Marks []HandMark
	// Out receives the decisions' table and the answer; Color allows colours
	// in it.
	Out   io.Writer
	Color bool
	// Output says where the session's document goes (Output.JSON, the
	// page at Output.HTML), written before the session is ended, whatever
	// the outcome.
	Output Output
}

// Start resolves the endpoints, checks the option file against every tree
// of the range, takes the state directory and bisects, resuming the
// unfinished session stored there when it is this one (its stored runs are
// used, not measured again). It returns the outcome as an error: nil when
// the first bad commit was named, Answer(NoRegression) or Answer(Undecided),
// a usage error for wrong input (nothing built), else the session's failure
// (SessionError: kept for resume).
func Start(ctx context.Context, su *Setup, req StartRequest) error {
	if su.SearchPolicy.Jobs < 1 {
		return With(Failure, errors.New("app.Start: the setup has no search settings (SetupRequest.Search)"))
	}
	if !req.NoExplain && (req.ExplainRuns < 0 || req.ExplainRuns == 1) {
		return usageError("{explain-runs} %d: at least 2 profiled runs a side are needed for an interval ({no-explain} leaves the step out)", req.ExplainRuns)
	}
	good, bad, all, err := resolveRange(su, req)
	if err != nil {
		return err
	}
	cfg := su.SearchPolicy
	cfg.Good, cfg.Bad, cfg.Commits = good, bad, all
	cfg.NoConfirm, cfg.FirstParent = req.NoConfirm, req.FirstParent
	if err := su.Lock(req.StateDir); err != nil {
		return err
	}
	if cur, err := su.Store.Current(store.KindStart); err == nil && cur != nil {
		su.layoutsAsBegun(cur.Identity())
	}
	var nar *narrowed
	if su.Build.Binaries != nil && len(req.Marks) > 0 {
		return usageError("{binaries} and marks from a git bisect log (replay) do not go together: the log's marks are of commits, the first phase measures releases; leave out one of them")
	}
	if su.Build.Binaries != nil {
		if nar, err = narrowByReleases(ctx, su, req, cfg); err != nil {
			return err
		}
		if nar != nil {
			good, bad = nar.good, nar.bad
			if all, err = bisect.Range(su.Repo, good, bad); err != nil {
				return With(OutcomeOf(err), err)
			}
			cfg.Good, cfg.Bad, cfg.Commits = good, bad, all
		}
	}
	sess, identity, keepDocs, err := resumable(su, &cfg, req, good, bad, nar)
	if err != nil {
		return err
	}
	b := &bisection{su: su, req: req, cfg: cfg, sess: sess, all: all, commits: all, narrowed: nar,
		subjects: func(h string) string { return bisect.Subject(su.Repo, h) }}
	if !keepDocs {
		if err := b.leaveOutDocs(); err != nil {
			return err
		}
	}
	b.ctx = ctx
	run, err := b.newSession(identity)
	if err != nil {
		return err
	}
	b.res = run.Result()
	_, runErr := run.Run(ctx)
	if b.runners != nil {
		b.runners.Close()
		fmt.Fprintf(su.Log, "runner hosts: %s\n", b.runners.Summary(b.res.Runs))
	}
	doc := b.document(ctx, runErr)
	su.writeBisection(req.Output, doc, b.sess.ID, "perfbisect: bisection "+req.Good+".."+req.Bad)
	return b.end(ctx, doc, runErr)
}

// resolveRange resolves the request's endpoints and lists the range between
// them, checking the option file against every tree of it. Errors: usage
// for endpoints or settings that do not fit; git's failure.
func resolveRange(su *Setup, req StartRequest) (good, bad string, commits []bisect.Commit, err error) {
	if good, err = bisect.Resolve(su.Repo, req.Good); err != nil {
		return "", "", nil, usageError("{good}: %w", err)
	}
	if bad, err = bisect.Resolve(su.Repo, req.Bad); err != nil {
		return "", "", nil, usageError("{bad}: %w", err)
	}
	if commits, err = bisect.Range(su.Repo, good, bad); err != nil {
		return "", "", nil, With(OutcomeOf(err), err) // a usage error, or git's failure
	}
	revs := []string{good, bad}
	for _, cm := range commits {
		revs = append(revs, cm.Hash)
	}
	if err := su.CheckSettings(revs...); err != nil {
		return "", "", nil, With(OutcomeOf(err), err) // the option file's, or git's failure
	}
	return good, bad, commits, nil
}

// bisection is one run of Start: its search (cfg), the stored session, the
// range (all) and the commits searched (commits: without the inert ones
// unless kept, which inert names), and the result as it grows.
type bisection struct {
	ctx      context.Context
	runners  *runner.Measurer // the runner hosts' (nil: runs taken here)
	su       *Setup
	req      StartRequest
	cfg      session.Config
	sess     *store.Session // nil until stored (newSession)
	all      []bisect.Commit
	commits  []bisect.Commit
	inert    map[string]string
	sameAs   map[string]string // left-out commit -> the commit whose server it builds
	narrowed *narrowed         // the releases a first phase narrowed good..bad to (--binaries), or nil
	res      *session.Result
	subjects func(hash string) string
}

// leaveOutDocs takes the commits that change only documentation, tests or
// CI files out of the search, saying how many.
func (b *bisection) leaveOutDocs() error {
	commits, inert, err := bisect.LeaveOutInert(b.su.Repo, b.all, b.cfg.Bad)
	if err != nil {
		return With(Failure, err)
	}
	b.commits, b.inert, b.cfg.Commits = commits, inert, commits
	b.sameAs = bisect.SameServer(b.all, commits)
	if docs := leftOutDocs(b.all, commits, inert, nil, func(string) string { return "" }, b.cfg.FirstParent, b.cfg.Bad); len(docs) > 0 {
		fmt.Fprintf(b.su.Log, "%s only documentation, tests or CI files (%.10s: %s, ...): left out, they build their parent's server (--keep-doc-commits tests them)\n",
			map[bool]string{true: "1 commit changes", false: fmt.Sprintf("%d commits change", len(docs))}[len(docs) == 1], docs[0].Commit, docs[0].Changes)
	}
	return nil
}

// newSession makes the search over the stored runs and the request's marks
// by hand, stores the session (when it is not a resumed one) and the marks,
// and says what the search is about to do.
func (b *bisection) newSession(identity store.Identity) (*session.Session, error) {
	su, cfg := b.su, &b.cfg
	stored := len(cfg.Replay)
	marks, err := newMarks(su, *cfg, b.req.Marks, b.commits, b.sameAs)
	if err != nil {
		return nil, err
	}
	for _, m := range marks {
		cfg.Replay = append(cfg.Replay, session.MarkEvent(m))
	}
	st := su.Store
	table := &report.Table{W: b.req.Out, Subjects: b.subjects, Metric: cfg.Metric, Color: b.req.Color}
	steps := su.StoreSession(cfg, func() int64 { return b.sess.ID }, 0, 0, func(s session.Step) { table.Step(s, b.res.Runs) })
	cfg.Hooks.Diverged = func(seq int) {
		if err := st.Truncate(b.sess.ID, seq, steps()); err != nil {
			fmt.Fprintf(os.Stderr, "perfbisect: %v\n", err)
		}
	}
	// The measurer records builds under the session, known once it is stored.
	var m bisect.Measurer = su.Measurer(func() int64 { return b.sess.ID })
	if len(su.Runners) > 0 {
		rm, err := su.RunnerMeasurer(b.ctx, m.(*measure.Measurer), su.Version)
		if err != nil {
			return nil, err
		}
		b.runners = rm
		m = rm
		if len(su.Runners) > 1 {
			cfg.Hosts = rm.Names()
		}
	}
	run, err := session.New(*cfg, m)
	if err != nil {
		return nil, With(Usage, err) // nothing stored: the same start with other flags may follow
	}
	if b.sess == nil {
		dir, _ := os.Getwd()
		if b.sess, err = su.Begin(store.KindStart, b.req.Args, dir, cfg.Good, cfg.Bad, identity); err != nil {
			return nil, With(Failure, err)
		}
	}
	for i, m := range marks {
		if err := st.Append(b.sess.ID, stored+i, session.MarkEvent(m)); err != nil {
			return nil, With(Failure, err)
		}
		fmt.Fprintf(su.Log, "%.10s marked %s by hand: %s\n", m.Commit, m.Mark, m.Reason)
	}
	n := len(b.commits)
	if cfg.FirstParent {
		n = len(bisect.NewGraph(b.commits).FirstParentLine(cfg.Bad, nil))
	}
	fmt.Fprintf(su.Log, "%s after good %.10s up to bad %.10s: about %s (a build each); the runs and the time they take are estimated once the endpoints are measured; state in %s\n",
		Counted(n, "commit"), cfg.Good, cfg.Bad, Counted(expectedSteps(n), "step"), su.StateDir)
	priorNoise(su.Log, st, b.sess.ID, cfg.Metric, map[string]string{"good": cfg.Good, "bad": cfg.Bad})
	return run, nil
}

// document is the session's document once the search ended (runErr its
// error), with the why of a named first bad commit (explainCulprit).
func (b *bisection) document(ctx context.Context, runErr error) report.Document {
	cfg := b.cfg
	doc := report.NewDocument(b.res, cfg.Metric, b.subjects)
	doc.Place(cfg.Good, cfg.Bad, b.commits)
	doc.Search = cfg.Search
	doc.Workload = b.su.Workload.Summary()
	doc.LeftOut = leftOutDocs(b.all, b.commits, b.inert, b.res, b.subjects, cfg.FirstParent, cfg.Bad)
	if b.narrowed != nil {
		doc.Releases = b.narrowed.doc
	}
	if runErr != nil {
		doc.Result, doc.Error = "error", runErr.Error()
		if ctx.Err() != nil {
			doc.Error = "interrupted"
		}
	} else {
		runs := b.req.ExplainRuns
		if b.req.NoExplain {
			runs = -1
		}
		doc.Explain = explainCulprit(ctx, b.su, b.res, runs, b.req.Args)
	}
	return doc
}

// end stores how the session ended, prints the answer and its why, and
// returns the outcome (Start's).
func (b *bisection) end(ctx context.Context, doc report.Document, runErr error) error {
	su, st, res := b.su, b.su.Store, b.res
	if runErr != nil {
		var ee *session.EndpointError
		if errors.As(runErr, &ee) && ctx.Err() == nil {
			// Resuming would only repeat it: the session ends here.
			_ = st.End(b.sess.ID, store.Failed, "error", doc)
		}
		return SessionError(runErr, ctx.Err() != nil, su.StateDir, su.RepoRoot)
	}
	if err := st.End(b.sess.ID, store.Done, string(res.Outcome), doc); err != nil {
		fmt.Fprintf(os.Stderr, "perfbisect: %v\n", err)
	}
	report.Final(b.req.Out, res, b.subjects)
	if nar := b.narrowed; nar != nil && res.Outcome == session.NoRegression {
		fmt.Fprintf(b.req.Out, "the vendors' binaries of %s and %s differ, builds of them here do not: the difference is in how the vendor built them (compiler, flags, bundled libraries), not in the commits between\n", nar.doc.Good, nar.doc.Bad)
	}
	if doc.Explain != nil {
		report.WriteWhy(b.req.Out, false, *doc.Explain)
	}
	if ctx.Err() != nil {
		return With(Interrupted, errors.New("interrupted while profiling for the why; the answer above stands (stored: perfbisect report shows it)"))
	}
	switch res.Outcome {
	case session.Found:
		return nil
	case session.NoRegression:
		return Answer(NoRegression)
	default:
		return Answer(Undecided)
	}
}

// asBegun gives cfg the search a stored session was begun with where the
// user chose none: a session begun by a perfbisect without the probabilistic
// search (legacySearch) goes on as the classic search, with the command's
// confidence and repeat limit (policy's) unless chosen.
func asBegun(sess *store.Session, cfg *session.Config, policy session.Config, chosen SearchRequest) {
	if !legacySearch(sess) || chosen.SearchSet {
		return
	}
	cfg.Search = session.SearchClassic
	if !chosen.ConfidenceSet {
		cfg.Confidence = policy.Confidence
	}
	if !chosen.MaxRepeatsSet {
		cfg.MaxRepeats = policy.MaxRepeats
	}
}

// resumable returns the unfinished start session of su's store when it is
// this one (its events go into cfg.Replay; nil when there is none), this
// session's identity (with the first phase that narrowed its endpoints,
// nar, when there was one), and whether it keeps the commits that change only
// documentation, tests or CI files in its search. A session begun by a
// perfbisect without the probabilistic search resumes as the classic search
// it was, unless the request chose a search; one begun before such commits
// were left out keeps them. Errors (usage): the unfinished session is
// another one (resume it or reset it), or resume finds it changed.
func resumable(su *Setup, cfg *session.Config, req StartRequest, good, bad string, nar *narrowed) (*store.Session, store.Identity, bool, error) {
	st := su.Store
	sess, err := st.Current(store.KindStart)
	if err != nil {
		return nil, nil, false, With(Failure, err)
	}
	if sess != nil {
		asBegun(sess, cfg, su.Policy, su.SearchChosen)
	}
	keepDocs, docs := req.KeepDocCommits, true
	if sess != nil && !sess.Identity().HasDocCommits() {
		// Begun by a perfbisect that tested every commit: it goes on so.
		keepDocs, docs = true, false
	}
	identity := startIdentity(su, *cfg, good, bad, keepDocs, docs)
	if nar != nil {
		identity[store.KeyNarrowedFrom] = nar.key
	}
	k := identity.Key()
	switch {
	case sess == nil:
		return nil, identity, keepDocs, nil
	case sess.Key != k && req.Resuming:
		return nil, nil, false, bisect.Usagef("the unfinished session in %s cannot be resumed as it was started: %s changed since (%s). Restore them, or end the session with perfbisect reset",
			su.StateDir, identity.Diff(sess.Identity()), sess.CommandLine())
	case sess.Key != k:
		diff := identity.Diff(sess.Identity())
		next := "Run perfbisect resume to continue it, or perfbisect reset to end it"
		if strings.Contains(diff, "content") || strings.Contains(diff, "script file") || strings.Contains(diff, "workload sysbench") {
			// A file changed under the session: resume would read it too.
			next = "Restore what changed to continue it (perfbisect resume), or end it with perfbisect reset"
		}
		return nil, nil, false, bisect.Usagef("an unfinished session is stored in %s (started %s: %s); it differs from this one in: %s. %s",
			su.StateDir, sess.Created.Local().Format("2006-01-02 15:04"), sess.CommandLine(), diff, next)
	}
	if cfg.Replay, err = st.Events(sess.ID); err != nil {
		return nil, nil, false, With(Failure, err)
	}
	n, _ := st.RunCount(sess.ID)
	fmt.Fprintf(su.Log, "resuming session %d started %s: %d runs stored are used, not measured again\n",
		sess.ID, sess.Created.Local().Format("2006-01-02 15:04"), n)
	return sess, identity, keepDocs, nil
}

// newMarks resolves the request's hand marks against the range (commits)
// and the marks cfg.Replay already holds, and returns the ones not stored
// yet. Errors (usage): a revision that does not resolve, or a mark that
// contradicts the others.
func newMarks(su *Setup, cfg session.Config, marks []HandMark, commits []bisect.Commit, sameAs map[string]string) ([]session.Marked, error) {
	if len(marks) == 0 {
		return nil, nil
	}
	var earlier []session.Marked
	have := map[string]bool{} // commit and verdict
	for _, e := range cfg.Replay {
		if e.Kind == session.EventMark {
			m, _ := session.ParseMark(e.Mark)
			earlier = append(earlier, session.Marked{Commit: e.Commit, Mark: m, Reason: e.Reason})
			have[e.Commit+" "+e.Mark] = true
		}
	}
	all, err := resolveMarks(su.Repo, commits, sameAs, cfg.Good, cfg.Bad, cfg.FirstParent, earlier, marks, "this bisection", su.Log)
	if err != nil {
		return nil, err
	}
	var out []session.Marked
	for _, m := range all {
		if !have[m.Commit+" "+m.Mark.String()] {
			out = append(out, m)
		}
	}
	return out, nil
}

// Counted is n with its noun: "1 commit", "5 commits".
func Counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// leftOutDocs lists the commits of all that the search did not have (kept),
// oldest first; once res names the first bad commit, each is bad when it
// descends from it and good otherwise (its server is its parent's). With
// firstParent only those on bad's first-parent line are listed (the search
// never looked at the side branches).
func leftOutDocs(all, kept []bisect.Commit, inert map[string]string, res *session.Result, subjects func(string) string, firstParent bool, bad string) []report.LeftOutDoc {
	in := map[string]bool{}
	for _, c := range kept {
		in[c.Hash] = true
	}
	g := bisect.NewGraph(all)
	line := map[string]bool{}
	for _, h := range g.FirstParentLine(bad, nil) {
		line[h] = true
	}
	var out []report.LeftOutDoc
	for i := len(all) - 1; i >= 0; i-- { // the range is newest first
		c := all[i]
		if in[c.Hash] || firstParent && !line[c.Hash] {
			continue // searched, or off the line a --first-parent search follows
		}
		d := report.LeftOutDoc{Commit: c.Hash, Subject: subjects(c.Hash), Changes: inert[c.Hash]}
		if res != nil && res.Outcome == session.Found && res.FirstBad != "" {
			d.Verdict = "good"
			if g.Descends(c.Hash, res.FirstBad) {
				d.Verdict = "bad"
			}
		}
		out = append(out, d)
	}
	return out
}

// expectedSteps is about how many commits a bisection of n candidates
// builds and measures besides the endpoints: log2 n, and the culprit's
// parent confirmed.
func expectedSteps(n int) int {
	return int(math.Ceil(math.Log2(float64(max(n, 1))))) + 1
}

// legacySearch reports whether a stored start session's identity predates
// the search setting (it was a classic search).
func legacySearch(x *store.Session) bool {
	id := x.Identity()
	_, ok := id.Search()
	return len(id) > 0 && !ok
}

// priorNoise prints the run-to-run noise earlier sessions measured on the same
// commits with the same workload, build recipe and option file: what to expect
// before this session's own runs (which alone decide).
func priorNoise(w io.Writer, st *store.Store, id int64, metric session.Metric, commits map[string]string) {
	for _, name := range []string{"good", "bad"} {
		runs, err := st.EarlierRuns(id, commits[name], store.SameMeasurement)
		if err != nil || len(runs) < 3 {
			continue
		}
		vals := make([]float64, len(runs))
		for i, r := range runs {
			vals[i] = metric.Value(r)
		}
		fmt.Fprintf(w, "earlier sessions measured %s %.10s %d times: median %s %.1f, noise (robust CV) %.1f%% (what to expect; this session decides on its own runs)\n",
			name, commits[name], len(runs), metric, stats.Median(vals), 100*stats.RobustCV(vals))
	}
}
