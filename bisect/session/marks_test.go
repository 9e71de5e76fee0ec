package session

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/simmeasure"
)

// interrupted is a simulated measurer that stops the session (as Ctrl-C
// does) at its stop-th run, and counts the runs of every commit.
type interrupted struct {
	*simmeasure.Measurer
	stop int
	runs map[string]int
}

var errStopped = errors.New("interrupted")

func (m *interrupted) Measure(ctx context.Context, commit string, runs int) ([]bisect.Run, error) {
	if m.stop > 0 && m.Calls+1 >= m.stop {
		return nil, errStopped
	}
	m.runs[commit] += runs
	return m.Measurer.Measure(ctx, commit, runs)
}

// handMarkSession runs a session to its stop-th run and returns the
// events it stored.
func handMarkSession(t *testing.T, cfg Config, culprit string, seed uint64, stop int) []Event {
	t.Helper()
	var events []Event
	cfg.Hooks.Record = func(seq int, e Event) error {
		if seq != len(events) {
			t.Fatalf("recorded event %d as %d", len(events), seq)
		}
		events = append(events, e)
		return nil
	}
	m := &interrupted{Measurer: &simmeasure.Measurer{Commits: cfg.Commits, Base: 800, Culprits: map[string]float64{culprit: 0.9}, CV: 0.03,
		Rand: rand.New(rand.NewPCG(seed, 3))}, stop: stop, runs: map[string]int{}}
	s, _ := New(cfg, m)
	if _, err := s.Run(context.Background()); !errors.Is(err, errStopped) {
		t.Fatalf("first session: %v, want it interrupted", err)
	}
	return events
}

// TestHandMarksNarrowAResumedSearch: a session interrupted after its first
// candidate runs; the user marks 10 good and 20 bad by hand; the resumed
// session uses every stored event (the marks stand where they were given),
// never runs a commit outside (10, 20], names the culprit 17, and has a
// step per mark with the user's reason. The whole stored session replays
// again with no live run. Both searches.
func TestHandMarksNarrowAResumedSearch(t *testing.T) {
	for _, search := range []string{SearchBayes, SearchClassic} {
		t.Run(search, func(t *testing.T) {
			cfg, hs := searchConfig(search)
			events := handMarkSession(t, cfg, hs[17], 5, 30) // past the endpoints: inside the search
			stored := len(events)
			events = append(events,
				MarkEvent(Marked{Commit: hs[10], Mark: bisect.Good, Reason: "built by hand: 812 tps like good"}),
				MarkEvent(Marked{Commit: hs[20], Mark: bisect.Bad, Reason: "the release notes name it"}))

			cfg.Replay = events
			var live []Event
			cfg.Hooks.Record = func(seq int, e Event) error {
				if seq != len(events)+len(live) {
					t.Fatalf("live event stored as %d, want %d", seq, len(events)+len(live))
				}
				live = append(live, e)
				return nil
			}
			cfg.Hooks.Diverged = func(seq int) { t.Errorf("the resumed session left its replay at %d", seq) }
			m := &interrupted{Measurer: &simmeasure.Measurer{Commits: cfg.Commits, Base: 800, Culprits: map[string]float64{hs[17]: 0.9}, CV: 0.03,
				Rand: rand.New(rand.NewPCG(6, 3))}, runs: map[string]int{}}
			s, _ := New(cfg, m)
			res, err := s.Run(context.Background())
			if err != nil || res.Outcome != Found || res.FirstBad != hs[17] {
				t.Fatalf("resumed: %v %s %.3s (%s)", err, res.Outcome, res.FirstBad, res.Why)
			}
			if res.Replayed != stored {
				t.Errorf("%d of %d stored runs and prepares replayed", res.Replayed, stored)
			}
			for i, h := range hs[1:30] {
				if pos := i + 1; (pos <= 10 || pos >= 20) && m.runs[h] > 0 {
					t.Errorf("commit %d outside the hand marks ran %d times after them", pos, m.runs[h])
				}
			}
			hand := map[string]Step{}
			for _, st := range res.Steps {
				if st.Hand {
					hand[st.Commit] = st
				}
			}
			if st := hand[hs[10]]; st.Verdict != "good" || !strings.Contains(st.Reason, "812 tps like good") || st.Role != RoleMidpoint {
				t.Errorf("step of the good mark: %+v", st)
			}
			if st := hand[hs[20]]; st.Verdict != "bad" || !strings.Contains(st.Reason, "release notes") {
				t.Errorf("step of the bad mark: %+v", st)
			}
			if res.Verdicts[hs[10]] != "good" || res.Verdicts[hs[20]] != "bad" {
				t.Errorf("verdicts %q %q", res.Verdicts[hs[10]], res.Verdicts[hs[20]])
			}

			// Everything stored, marks in the middle, replays exactly.
			cfg.Replay = append(append([]Event(nil), events...), live...)
			cfg.Hooks = Hooks{Diverged: func(seq int) { t.Errorf("second replay left at %d", seq) }}
			m2 := &interrupted{Measurer: &simmeasure.Measurer{Commits: cfg.Commits, Base: 800, Rand: rand.New(rand.NewPCG(1, 1))}, runs: map[string]int{}}
			s2, _ := New(cfg, m2)
			again, err := s2.Run(context.Background())
			if err != nil || again.FirstBad != hs[17] || m2.Calls != 0 {
				t.Fatalf("second replay: %v %.3s, %d live runs", err, again.FirstBad, m2.Calls)
			}
		})
	}
}

// TestHandMarkOverridesTheRuns: the user's good on the culprit 17 is
// certain: the runs that say it is bad do not count, and the first bad
// commit is its child 18.
func TestHandMarkOverridesTheRuns(t *testing.T) {
	for _, search := range []string{SearchBayes, SearchClassic} {
		t.Run(search, func(t *testing.T) {
			cfg, hs := searchConfig(search)
			cfg.Replay = []Event{MarkEvent(Marked{Commit: hs[17], Mark: bisect.Good, Reason: "the user knows"})}
			m := &simmeasure.Measurer{Commits: cfg.Commits, Base: 800, Culprits: map[string]float64{hs[17]: 0.9}, CV: 0.03, Rand: rand.New(rand.NewPCG(2, 2))}
			s, _ := New(cfg, m)
			res, err := s.Run(context.Background())
			if err != nil || res.FirstBad != hs[18] && !(res.Outcome == Ambiguous && contains(res.Range, hs[18])) {
				t.Fatalf("%v %s %.3s %v (%s)", err, res.Outcome, res.FirstBad, res.Range, res.Why)
			}
			if contains(res.Range, hs[17]) {
				t.Errorf("the commit marked good is in the answer %v", res.Range)
			}
		})
	}
}

// TestHandMarksReopenAFinishedRange: a session that ended as a range (the
// culprit's parent 16 does not build) gets 16 marked good by hand; replayed
// with the mark after its last event, it names 17.
func TestHandMarksReopenAFinishedRange(t *testing.T) {
	for _, search := range []string{SearchBayes, SearchClassic} {
		t.Run(search, func(t *testing.T) {
			cfg, hs := searchConfig(search)
			var events []Event
			cfg.Hooks.Record = func(seq int, e Event) error { events = append(events, e); return nil }
			m := &simmeasure.Measurer{Commits: cfg.Commits, Base: 800, Culprits: map[string]float64{hs[17]: 0.9}, CV: 0.03,
				Untestable: map[string]string{hs[16]: "build failed"}, Rand: rand.New(rand.NewPCG(4, 4))}
			s, _ := New(cfg, m)
			res, err := s.Run(context.Background())
			if err != nil || res.Outcome != Ambiguous || !contains(res.Range, hs[16]) || !contains(res.Range, hs[17]) {
				t.Fatalf("first session: %v %s %v (%s)", err, res.Outcome, res.Range, res.Why)
			}
			cfg.Replay = append(events, MarkEvent(Marked{Commit: hs[16], Mark: bisect.Good, Reason: "built with a patch: good"}))
			cfg.Hooks = Hooks{}
			s2, _ := New(cfg, m)
			res, err = s2.Run(context.Background())
			if err != nil || res.Outcome != Found || res.FirstBad != hs[17] {
				t.Fatalf("with the mark: %v %s %.3s %v (%s)", err, res.Outcome, res.FirstBad, res.Range, res.Why)
			}
		})
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestHandMarksOutliveADivergence: when a resumed session leaves its replay
// (the settings changed), the runs after that point are dropped but the hand
// marks stored after it are kept: applied, and stored again.
func TestHandMarksOutliveADivergence(t *testing.T) {
	cfg, hs := bayesConfig(30)
	events := handMarkSession(t, cfg, hs[17], 5, 30)
	events = append(events, MarkEvent(Marked{Commit: hs[20], Mark: bisect.Bad, Reason: "known"}))
	cfg.Threshold = 0.02
	cfg.Repeats = 8 // the endpoints take other runs: the replay ends early
	cfg.Replay = events
	diverged := -1
	var recorded []Event
	cfg.Hooks.Diverged = func(seq int) { diverged = seq }
	cfg.Hooks.Record = func(seq int, e Event) error {
		if diverged >= 0 && seq != diverged+len(recorded) {
			t.Fatalf("event stored at %d after diverging at %d with %d recorded", seq, diverged, len(recorded))
		}
		recorded = append(recorded, e)
		return nil
	}
	m := &interrupted{Measurer: &simmeasure.Measurer{Commits: cfg.Commits, Base: 800, Culprits: map[string]float64{hs[17]: 0.9}, CV: 0.03,
		Rand: rand.New(rand.NewPCG(8, 3))}, runs: map[string]int{}}
	s, _ := New(cfg, m)
	res, err := s.Run(context.Background())
	if err != nil || res.FirstBad != hs[17] {
		t.Fatalf("%v %.3s (%s)", err, res.FirstBad, res.Why)
	}
	if diverged < 0 || len(recorded) == 0 || recorded[0].Kind != EventMark || recorded[0].Commit != hs[20] {
		t.Fatalf("diverged at %d; first event stored after it %+v, want the mark of 20", diverged, recorded[0])
	}
	for i, h := range hs[20:30] {
		if m.runs[h] > 0 {
			t.Errorf("commit %d, above the hand mark, ran %d times", 20+i, m.runs[h])
		}
	}
}

// TestHandMarkAfterTheConfirmation: a classic session that ended confirmed
// is reopened with its culprit marked good: the search goes on past the
// confirmation with the mark, and names the commit after it.
func TestHandMarkAfterTheConfirmation(t *testing.T) {
	cfg, hs := bayesConfig(30)
	cfg = config(cfg.Commits, hs)
	cfg.Threshold = 0.03
	var events []Event
	cfg.Hooks.Record = func(seq int, e Event) error { events = append(events, e); return nil }
	m := &simmeasure.Measurer{Commits: cfg.Commits, Base: 800, Culprits: map[string]float64{hs[17]: 0.9}, CV: 0.03, Rand: rand.New(rand.NewPCG(4, 4))}
	s, _ := New(cfg, m)
	res, err := s.Run(context.Background())
	if err != nil || res.FirstBad != hs[17] || res.Steps[len(res.Steps)-1].Role != RoleConfirm {
		t.Fatalf("first session: %v %s %.3s (%s)", err, res.Outcome, res.FirstBad, res.Why)
	}
	cfg.Replay = append(events, MarkEvent(Marked{Commit: hs[17], Mark: bisect.Good, Reason: "rebuilt it: good"}))
	cfg.Hooks = Hooks{}
	s2, _ := New(cfg, m)
	res, err = s2.Run(context.Background())
	if err != nil || res.FirstBad != hs[18] || res.Verdicts[hs[17]] != "good" {
		t.Fatalf("with the mark after the confirmation: %v %s %.3s, verdict of 17 %q (%s)", err, res.Outcome, res.FirstBad, res.Verdicts[hs[17]], res.Why)
	}
}

// TestHandMarksKeptAtADivergenceSurviveAnInterrupt: the marks a divergence
// keeps are stored again at once, not with the next live event: a session
// stopped right after the divergence still has them.
func TestHandMarksKeptAtADivergenceSurviveAnInterrupt(t *testing.T) {
	cfg, hs := bayesConfig(30)
	events := handMarkSession(t, cfg, hs[17], 5, 30)
	events = append(events, MarkEvent(Marked{Commit: hs[20], Mark: bisect.Bad, Reason: "known"}))
	cfg.Threshold, cfg.Repeats = 0.02, 8 // another session: it leaves the replay early
	cfg.Replay = events
	stored := append([]Event(nil), events...) // the store, truncated at the divergence as the app does
	cfg.Hooks.Diverged = func(seq int) { stored = stored[:seq] }
	cfg.Hooks.Record = func(seq int, e Event) error {
		if seq != len(stored) {
			t.Fatalf("event stored at %d, the store has %d", seq, len(stored))
		}
		stored = append(stored, e)
		return nil
	}
	m := &interrupted{Measurer: &simmeasure.Measurer{Commits: cfg.Commits, Base: 800, Culprits: map[string]float64{hs[17]: 0.9}, CV: 0.03,
		Rand: rand.New(rand.NewPCG(8, 3))}, runs: map[string]int{}, stop: 1} // interrupted at the first live run
	s, _ := New(cfg, m)
	if _, err := s.Run(context.Background()); !errors.Is(err, errStopped) {
		t.Fatalf("%v, want the interrupt", err)
	}
	marks := 0
	for _, e := range stored {
		if e.Kind == EventMark && e.Commit == hs[20] {
			marks++
		}
	}
	if marks != 1 {
		t.Errorf("after the divergence and the interrupt the store holds the mark %d times, want once", marks)
	}
}

// TestHandMarksReplaced: a commit marked again gets its last mark: bad then
// skip is a skip (no longer certain), in both searches; a bad mark on a
// commit that does not build names it without running it.
func TestHandMarksReplaced(t *testing.T) {
	for _, search := range []string{SearchBayes, SearchClassic} {
		t.Run(search, func(t *testing.T) {
			cfg, hs := searchConfig(search)
			cfg.Replay = []Event{MarkEvent(Marked{Commit: hs[15], Mark: bisect.Bad}), MarkEvent(Marked{Commit: hs[15], Mark: bisect.Skip})}
			m := &simmeasure.Measurer{Commits: cfg.Commits, Base: 800, Culprits: map[string]float64{hs[17]: 0.9}, CV: 0.03, Rand: rand.New(rand.NewPCG(2, 2))}
			s, _ := New(cfg, m)
			res, err := s.Run(context.Background())
			if err != nil || res.FirstBad != hs[17] {
				t.Errorf("bad then skip on 15 (culprit 17): %v %s %.3s %d-range (%s)", err, res.Outcome, res.FirstBad, len(res.Range), res.Why)
			}

			cfg.Replay = []Event{MarkEvent(Marked{Commit: hs[17], Mark: bisect.Bad, Reason: "built elsewhere: slow"})}
			m2 := &interrupted{Measurer: &simmeasure.Measurer{Commits: cfg.Commits, Base: 800, Culprits: map[string]float64{hs[17]: 0.9}, CV: 0.03,
				Untestable: map[string]string{hs[17]: "build failed"}, Rand: rand.New(rand.NewPCG(2, 2))}, runs: map[string]int{}}
			s2, _ := New(cfg, m2)
			res, err = s2.Run(context.Background())
			if err != nil || res.FirstBad != hs[17] || m2.runs[hs[17]] != 0 {
				t.Errorf("bad by hand on the culprit that does not build: %v %s %.3s, %d runs of it (%s)", err, res.Outcome, res.FirstBad, m2.runs[hs[17]], res.Why)
			}
		})
	}
}

// searchConfig is the policy of the marks tests for search over a chain of
// 30 commits: bayesConfig's, or the classic one at a 3% threshold.
func searchConfig(search string) (Config, []string) {
	cfg, hs := bayesConfig(30)
	if search == SearchClassic {
		cfg = config(cfg.Commits, hs)
		cfg.Threshold = 0.03
	}
	return cfg, hs
}
