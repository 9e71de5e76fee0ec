package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/serverctl"
	"github.com/perfbisect/perfbisect/stats"
)

// CompareRequest is a head-to-head comparison of two revisions (as typed:
// anything bisect.Resolve takes), at each client thread count of Threads
// (nil: the workload's), each stored as a session of its own.
type CompareRequest struct {
	Base, Head string
	Threads    []int
	StateDir   string   // "" for the repository's default
	Args       []string // the command as typed, stored with each session
}

// Compare measures HEAD against BASE at each thread count, in order, until
// one fails. With several thread counts they share the error budget
// (Bonferroni): a change that is not there is reported with probability at
// most 1-confidence over all of them. It returns a document per comparison
// made (nil when the input was refused before any), their stored session
// ids, and the outcome as an error: nil (no regression beyond the
// threshold), Answer(Regression) when any row regressed, Answer(Undecided)
// when none did and one was inconclusive, a usage error (a revision that
// does not resolve or cannot be measured, a wrong option file), an
// interruption, or a failure.
func Compare(ctx context.Context, su *Setup, req CompareRequest) ([]report.CompareDoc, []int64, error) {
	base, err := bisect.Resolve(su.Repo, req.Base)
	if err != nil {
		return nil, nil, With(Usage, fmt.Errorf("BASE: %w", err))
	}
	head, err := bisect.Resolve(su.Repo, req.Head)
	if err != nil {
		return nil, nil, With(Usage, fmt.Errorf("HEAD: %w", err))
	}
	if base == head {
		return nil, nil, bisect.Usagef("BASE %s and HEAD %s are the same commit %.10s: nothing to compare", req.Base, req.Head, base)
	}
	if err := su.CheckSettings(base, head); err != nil {
		return nil, nil, err
	}
	cfg := su.Policy
	cfg.Good, cfg.Bad = base, head
	if len(req.Threads) > 1 {
		cfg.Confidence = 1 - (1-cfg.Confidence)/float64(len(req.Threads))
	}
	if _, err := session.NewComparison(cfg, nil); err != nil { // every setting checked before a build
		return nil, nil, With(Usage, err)
	}
	if err := su.Lock(req.StateDir); err != nil {
		return nil, nil, err
	}
	threads := req.Threads
	if threads == nil {
		threads = []int{su.Workload.Threads()}
	}
	docs := []report.CompareDoc{}
	var ids []int64
	var runErr error
	outcome := Done
	for _, n := range threads {
		su.Workload = su.Workload.WithThreads(n)
		doc, id, o, err := compareOnce(ctx, su, cfg, req.Args, base, head)
		docs = append(docs, doc)
		if id > 0 {
			ids = append(ids, id)
		}
		if err != nil {
			runErr = err
			break
		}
		switch {
		case o == Regression:
			outcome = Regression
		case o == Undecided && outcome == Done:
			outcome = Undecided
		}
	}
	if runErr != nil {
		var ee *session.EndpointError
		switch {
		case ctx.Err() != nil:
			return docs, ids, With(Interrupted, errors.New("interrupted; no server left running"))
		case errors.As(runErr, &ee):
			which := map[string]string{"good": "BASE", "bad": "HEAD"}[ee.Which]
			return docs, ids, With(Usage, fmt.Errorf("%s cannot be measured: %w", which, ee.Err))
		case errors.Is(runErr, serverctl.ErrOptionFile):
			return docs, ids, With(Usage, runErr) // as start: the user's file, not the tool
		default:
			return docs, ids, With(Failure, runErr)
		}
	}
	return docs, ids, Answer(outcome)
}

// compareOnce runs one comparison (at su.Workload's threads), stored as its own
// session, and returns its document, the stored session's id (0 when none was
// stored) and its outcome (Done, Regression or Undecided); err is the
// comparison's failure.
func compareOnce(ctx context.Context, su *Setup, cfg session.Config, args []string, base, head string) (report.CompareDoc, int64, Outcome, error) {
	st := su.Store
	identity := su.Identity(base, head, map[string]string{"command": "compare", "repo": su.RepoRoot})
	dir, _ := os.Getwd()
	doc := report.CompareDoc{Base: base, Head: head, BaseSubject: bisect.Subject(su.Repo, base), HeadSubject: bisect.Subject(su.Repo, head),
		Metric: string(cfg.Metric), Threshold: cfg.Threshold, Confidence: cfg.Confidence, Threads: su.Workload.Threads(),
		Workload: su.Workload.Summary()}
	sess, err := su.Begin(store.KindCompare, args, dir, base, head, identity)
	if err != nil {
		doc.Result, doc.Error = report.CompareError, err.Error()
		return doc, 0, Failure, err
	}
	su.StoreSession(&cfg, func() int64 { return sess.ID }, 0, 0, nil)
	s, err := session.NewComparison(cfg, su.Measurer(func() int64 { return sess.ID }))
	if err != nil {
		return doc, sess.ID, Usage, err
	}
	fmt.Fprintf(su.Log, "comparing base %.10s with head %.10s (%s, %d threads, threshold %.1f%%); state in %s\n",
		base, head, cfg.Metric, su.Workload.Threads(), 100*cfg.Threshold, su.StateDir)
	cmp, changed, runErr := s.Compare(ctx)
	res := s.Result()
	doc.Verdict, doc.BaseRuns, doc.HeadRuns, doc.Finished = cmp.Verdict.String(), res.Runs[base], res.Runs[head], time.Now().UTC()
	outcome := Done
	switch {
	case runErr != nil:
		doc.Result, doc.Error = report.CompareError, runErr.Error()
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
		doc.Rows = report.CompareRows(res.Runs[base], res.Runs[head], cfg.Metric, cmp)
	}
	state := store.Done
	if runErr != nil {
		state = store.Failed
	}
	if err := st.End(sess.ID, state, doc.Result, doc); err != nil {
		fmt.Fprintf(os.Stderr, "perfbisect: %v\n", err)
	}
	return doc, sess.ID, outcome, runErr
}
