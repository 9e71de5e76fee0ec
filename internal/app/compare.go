package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/serverctl"
	"github.com/perfbisect/perfbisect/stats"
)

// CompareRequest is a comparison of sides (as typed: revisions, DIR:REV,
// installed servers' directories; ResolveSides), the first the base, at each
// client thread count of Threads (nil: the workload's). Each pair of the
// base and another side at one thread count is a stored session of its
// own.
type CompareRequest struct {
	Sides    []string
	Threads  []int
	StateDir string   // "" for the repository's default
	Args     []string // the command as typed, stored with each session
	// NoExplain: no profiled runs after a regression (by default, the
	// first pair that regressed is explained: explainAfter).
	NoExplain bool
}

// Compare measures every side against the base at each thread count, in
// order, until one fails. The pairs share the error budget (Bonferroni over
// sides x thread counts): a change that is not there is reported with
// probability at most 1-confidence over all of them. A call that an earlier
// one left unfinished continues it (pairs): that call's finished pairs are
// not measured again, its unfinished one resumes from its stored runs. It returns a
// document per pair (nil when the input was refused before any), their
// stored session ids, and the outcome as an error: nil (no regression
// beyond the threshold), Answer(Regression) when any pair regressed,
// Answer(Undecided) when none did and one was inconclusive, a usage error
// (a side that does not resolve or cannot be measured, a wrong option
// file), an interruption, or a failure.
func Compare(ctx context.Context, su *Setup, req CompareRequest) ([]report.CompareDoc, []int64, error) {
	sides, err := ResolveSides(ctx, su, req.Sides)
	if err != nil {
		return nil, nil, err
	}
	if err := checkCompareSides(su, sides); err != nil {
		return nil, nil, err
	}
	if err := askInstalled(ctx, sides); err != nil {
		return nil, nil, err
	}
	threads := req.Threads
	if threads == nil {
		threads = []int{su.Workload.Threads()}
	}
	cfg := su.Policy
	cfg.Good, cfg.Bad = sides[0].Key, sides[1].Key
	if pairs := len(threads) * (len(sides) - 1); pairs > 1 {
		cfg.Confidence = 1 - (1-cfg.Confidence)/float64(pairs)
	}
	if _, err := session.NewComparison(cfg, nil); err != nil { // every setting checked before a build
		return nil, nil, With(Usage, err)
	}
	if err := su.Lock(req.StateDir); err != nil {
		return nil, nil, err
	}
	su.useSides(sides)
	todo, err := pairs(su, sides, threads)
	if err != nil {
		return nil, nil, err
	}
	docs := []report.CompareDoc{}
	var ids []int64
	var runErr error
	var failed Side
	outcome := Done
	regressed := -1 // the first pair that regressed
	for _, p := range todo {
		su.Workload = su.Workload.WithThreads(p.threads)
		doc, id, o, err := compareOnce(ctx, su, cfg, req.Args, sides[0], p.head, p.identity, p.stored)
		docs = append(docs, doc)
		if id > 0 {
			ids = append(ids, id)
		}
		if err != nil {
			runErr, failed = err, p.head
			break
		}
		switch {
		case o == Regression:
			outcome = Regression
			if regressed < 0 {
				regressed = len(docs) - 1
			}
		case o == Undecided && outcome == Done:
			outcome = Undecided
		}
	}
	if regressed >= 0 && runErr == nil && !req.NoExplain {
		if err := explainRegressed(ctx, su, req, sides[0], todo[regressed], docs, regressed); err != nil {
			return docs, ids, err
		}
	}
	if runErr != nil {
		return docs, ids, compareFailure(ctx, runErr, sides[0], failed)
	}
	return docs, ids, Answer(outcome)
}

// checkCompareSides checks the option file against the trees of the sides
// that are plain revisions (when it is the shared one), and each other
// side's server and option file (checkSides). Errors: usage.
func checkCompareSides(su *Setup, sides []Side) error {
	if len(su.SideOptionFiles) > 0 {
		return su.checkSides(sides)
	}
	var commits []string
	var others []Side
	for _, sd := range sides {
		if sd.Plain() {
			commits = append(commits, sd.Spec.Commit)
		} else {
			others = append(others, sd)
		}
	}
	if err := su.CheckSettings(commits...); err != nil {
		return err
	}
	return su.checkSides(others)
}

// explainRegressed profiles the pair that regressed first (docs[i]), within
// a tenth of the comparison's runs (explainAfter). Errors: Interrupted.
func explainRegressed(ctx context.Context, su *Setup, req CompareRequest, base Side, p pair, docs []report.CompareDoc, i int) error {
	spent := 0
	for _, d := range docs {
		spent += len(d.BaseRuns) + len(d.HeadRuns)
	}
	su.Workload = su.Workload.WithThreads(p.threads)
	docs[i].Explain = explainAfter(ctx, su, base, p.head, 0, spent, explainCommandLine(req.Args, base.Arg, p.head.Arg, p.threads))
	if ctx.Err() != nil {
		// The comparisons stand (stored); the report says what was not done.
		return With(Interrupted, errors.New("interrupted while profiling for the why; the comparison's answer stands"))
	}
	return nil
}

// compareFailure is the outcome of a comparison that failed measuring the
// pair of base and failed: interrupted, a side that cannot be measured or
// a file of the user's (usage), or a failure that the same command resumes.
func compareFailure(ctx context.Context, runErr error, base, failed Side) error {
	var ee *session.EndpointError
	switch {
	case ctx.Err() != nil:
		return With(Interrupted, errors.New("interrupted; no server left running. The same command continues it, measuring nothing twice"))
	case errors.As(runErr, &ee):
		which := map[string]Side{"good": base, "bad": failed}[ee.Which]
		return With(Usage, fmt.Errorf("side %s cannot be measured: %w", which.Describe(), ee.Err))
	case errors.Is(runErr, serverctl.ErrOptionFile), errors.Is(runErr, bisect.ErrUsage):
		return With(Usage, runErr) // as start: the user's file, not the tool
	}
	return With(Failure, fmt.Errorf("%w (the same compare command continues the comparison, measuring nothing twice)", runErr))
}

// A pair is the base and another side at one thread count, with its
// identity and the session stored of it that this call continues (nil:
// measured anew).
type pair struct {
	threads  int
	head     Side
	identity store.Identity
	stored   *store.Session
}

// pairs lists the comparison's pairs in order (each side against the base
// at each thread count) with what the store holds of each: an earlier call
// of this comparison that did not finish is continued (continued);
// otherwise every pair is measured anew.
func pairs(su *Setup, sides []Side, threads []int) ([]pair, error) {
	var todo []pair
	var stored []*store.Session
	for _, n := range threads {
		su.Workload = su.Workload.WithThreads(n)
		for _, head := range sides[1:] {
			p := pair{threads: n, head: head, identity: pairIdentity(su, sides[0], head)}
			x, err := su.Store.ByKey(store.KindCompare, p.identity.Key())
			if err != nil {
				return nil, With(Failure, err)
			}
			todo, stored = append(todo, p), append(stored, x)
		}
	}
	for i, x := range continued(stored) {
		todo[i].stored = x
	}
	return todo, nil
}

// continued is what a comparison continues of its pairs' stored sessions
// (in the pairs' order; nil where none is stored): when one is unfinished
// (an interrupted call), the finished ones before it (that call's) and the
// unfinished ones; the pairs after it were not reached by that call, so
// what is stored of them is older and they are measured anew. When none is
// unfinished, nothing: the comparison is measured anew.
func continued(stored []*store.Session) []*store.Session {
	out := make([]*store.Session, len(stored))
	for u, p := range stored {
		if p == nil || p.State == store.Done || p.State == store.Reset {
			continue
		}
		copy(out, stored[:u+1])
		for k := u + 1; k < len(stored); k++ {
			if q := stored[k]; q != nil && !q.Created.Before(p.Created) {
				out[k] = q
			}
		}
		return out
	}
	return out
}

// compareOnce compares head with base (at su.Workload's threads), stored as
// its own session, and returns its document, the stored session's id (0
// when none was stored) and its outcome (Done, Regression or Undecided);
// err is the comparison's failure. With stored (the session of identity an
// interrupted call left), a finished one is the answer (nothing is
// measured) and an unfinished one resumes from its runs.
func compareOnce(ctx context.Context, su *Setup, cfg session.Config, args []string, base, head Side, identity store.Identity, sess *store.Session) (report.CompareDoc, int64, Outcome, error) {
	st := su.Store
	cfg.Good, cfg.Bad = base.Key, head.Key
	dir, _ := os.Getwd()
	doc := report.CompareDoc{Base: base.Key, Head: head.Key, BaseSubject: sideSubject(su, base), HeadSubject: sideSubject(su, head),
		Metric: string(cfg.Metric), Threshold: cfg.Threshold, Confidence: cfg.Confidence, Threads: su.Workload.Threads(),
		Workload: su.Workload.Summary()}
	var err error
	switch {
	case sess != nil && sess.State == store.Done:
		var stored report.CompareDoc
		if err := json.Unmarshal(sess.Result, &stored); err == nil && stored.Result != "" {
			fmt.Fprintf(su.Log, "%s against %s at %s: measured by an earlier call (session %d): %s\n",
				sideName(head), sideName(base), Counted(stored.Threads, "thread"), sess.ID, stored.Result)
			return stored, sess.ID, outcomeOf(stored.Result), nil
		}
		sess = nil
	case sess != nil:
		if err := st.Reopen(sess.ID); err != nil {
			return doc, 0, Failure, err
		}
		if cfg.Replay, err = st.Events(sess.ID); err != nil {
			return doc, 0, Failure, err
		}
		n, _ := st.RunCount(sess.ID)
		fmt.Fprintf(su.Log, "resuming the comparison of %s with %s at %s (session %d) from its stored runs (%d), none measured again\n",
			sideName(head), sideName(base), Counted(su.Workload.Threads(), "thread"), sess.ID, n)
		if n == 0 {
			fmt.Fprintf(su.Log, "(the interrupted call had stored no run of it)\n")
		}
	}
	if sess == nil {
		if sess, err = su.Begin(store.KindCompare, args, dir, base.Key, head.Key, identity); err != nil {
			doc.Result, doc.Error = report.CompareError, err.Error()
			return doc, 0, Failure, err
		}
	}
	steps := su.StoreSession(&cfg, func() int64 { return sess.ID }, 0, 0, nil)
	cfg.Hooks.Diverged = func(seq int) {
		if err := st.Truncate(sess.ID, seq, steps()); err != nil {
			fmt.Fprintf(os.Stderr, "perfbisect: %v\n", err)
		}
	}
	m := su.Measurer(func() int64 { return sess.ID })
	s, err := session.NewComparison(cfg, m)
	if err != nil {
		return doc, sess.ID, Usage, err
	}
	fmt.Fprintf(su.Log, "comparing base %s with head %s (%s, %d threads, threshold %.1f%%); state in %s\n",
		sideName(base), sideName(head), cfg.Metric, su.Workload.Threads(), 100*cfg.Threshold, su.StateDir)
	cmp, changed, runErr := s.Compare(ctx)
	res := s.Result()
	doc.Verdict, doc.BaseRuns, doc.HeadRuns, doc.Finished = cmp.Verdict.String(), res.Runs[base.Key], res.Runs[head.Key], time.Now().UTC()
	doc.BaseSide, doc.HeadSide = sideDoc(ctx, su, m, sess.ID, base), sideDoc(ctx, su, m, sess.ID, head)
	outcome := Done
	switch {
	case runErr != nil:
		doc.Result, doc.Error = report.CompareError, runErr.Error()
		var ee *session.EndpointError
		if errors.As(runErr, &ee) {
			doc.Error = fmt.Sprintf("side %s cannot be measured: %v", map[string]Side{"good": base, "bad": head}[ee.Which].Describe(), ee.Err)
		}
		if ctx.Err() != nil {
			doc.Error = "interrupted"
		}
	case changed:
		doc.Result, doc.Why, outcome = report.CompareRegression, fmt.Sprintf("%+.1f%% (%s)", 100*cmp.Shift.Est, cmp.Rule), Regression
	case cmp.Verdict == stats.Unknown:
		doc.Result, doc.Why, outcome = report.CompareInconclusive, fmt.Sprintf("%s; %s", cmp.Rule, cmp.Need), Undecided
	default:
		doc.Result, doc.Why = report.CompareNoRegression, fmt.Sprintf("%s %+.1f%% (%s)", cmp.Verdict, 100*cmp.Shift.Est, cmp.Rule)
	}
	if runErr == nil {
		doc.Rows = report.CompareRows(res.Runs[base.Key], res.Runs[head.Key], cfg.Metric, cmp)
	}
	state := store.Done
	var ee *session.EndpointError
	switch {
	case errors.As(runErr, &ee) && ctx.Err() == nil:
		// A side that cannot be measured (a build the machine failed, a
		// server that would not start): resuming would only replay it, so
		// the next call measures the pair anew.
		state = store.Reset
	case runErr != nil:
		state = store.Failed // interrupted or failed: the next call resumes it
	}
	if err := st.End(sess.ID, state, doc.Result, doc); err != nil {
		fmt.Fprintf(os.Stderr, "perfbisect: %v\n", err)
	}
	return doc, sess.ID, outcome, runErr
}

// outcomeOf is the outcome of a comparison's result (report.Compare...).
func outcomeOf(result string) Outcome {
	switch result {
	case report.CompareRegression:
		return Regression
	case report.CompareInconclusive:
		return Undecided
	}
	return Done
}

// sideName names a side in progress lines: a revision's short hash, or
// what the user wrote with its option file's name ("HEAD [stat.cnf]").
func sideName(s Side) string {
	if s.Plain() {
		return fmt.Sprintf("%.10s", s.Spec.Commit)
	}
	if !s.Spec.OptionFile.IsZero() {
		return s.Arg + " [" + filepath.Base(s.Spec.OptionFile.Path) + "]"
	}
	return s.Arg
}

// sideSubject is the subject line of a side's revision, or what an
// installed server is.
func sideSubject(su *Setup, s Side) string {
	if s.Install != nil {
		return fmt.Sprintf("installed %s %s", s.Install.Flavor, s.Install.Version)
	}
	return bisect.Subject(s.Repo, s.Spec.Commit)
}

// sideDoc is the side as it ran: its server binary and version (as the
// measurer prepared it, else its build recorded in session id's store),
// and its option file.
func sideDoc(ctx context.Context, su *Setup, m *measure.Measurer, id int64, s Side) *report.SideDoc {
	d := &report.SideDoc{Arg: s.Arg, What: sideWhat(s), OptionFile: s.Spec.OptionFile.Path}
	in := s.Install
	if in == nil {
		in = m.Server(s.Key)
	}
	if in == nil {
		if builds, err := su.Store.Builds(id); err == nil {
			for _, b := range builds {
				if b.Commit == s.Spec.Commit && b.Prefix != "" {
					in, _ = serverctl.FindInstall(ctx, b.Prefix)
				}
			}
		}
	}
	if in != nil {
		d.Server, d.Version = in.Server, in.VersionLine
	}
	return d
}
