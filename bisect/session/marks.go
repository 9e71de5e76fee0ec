package session

import (
	"fmt"

	"github.com/perfbisect/perfbisect/bisect"
)

// EventMark is the kind of a mark given by hand (perfbisect mark, replay):
// Event.Mark is the verdict (good, bad or skip), Event.Reason the user's
// reason. It is stored among the measured events at the place the session
// had reached when it was given, so that a resumed session takes it at the
// same point of its replay as the session before it did.
const EventMark = "mark"

// Marked is a verdict given by hand, with the user's reason.
type Marked struct {
	Commit string
	Mark   bisect.Mark // Good, Bad or Skip
	Reason string
}

// MarkEvent is the stored event of a hand mark.
func MarkEvent(m Marked) Event {
	return Event{Kind: EventMark, Commit: m.Commit, Mark: m.Mark.String(), Reason: m.Reason}
}

// ParseMark reads a verdict word: good, bad or skip, and old and new (git
// bisect's other terms, old for good). Errors name the word.
func ParseMark(word string) (bisect.Mark, error) {
	switch word {
	case "good", "old":
		return bisect.Good, nil
	case "bad", "new":
		return bisect.Bad, nil
	case "skip":
		return bisect.Skip, nil
	}
	return bisect.Unmarked, fmt.Errorf("%q is not a verdict: want good, bad or skip", word)
}

// marked returns the hand mark of an event of kind EventMark.
func (e Event) marked() Marked {
	m, _ := ParseMark(e.Mark)
	return Marked{Commit: e.Commit, Mark: m, Reason: e.Reason}
}

// handSteps holds the marks given by hand, in the order they were applied,
// and the classic search's measured verdicts in order (from which the search
// is rebuilt, hand marks first, when a hand mark arrives).
type handSteps struct {
	pending  []Marked
	applied  []Marked
	by       map[string]Marked
	measured []Marked
}

// takeMarks moves the hand marks stored at the replay's current place to the
// pending ones (they apply at the next decision point).
func (s *Session) takeMarks() {
	for !s.live && s.seq < len(s.cfg.Replay) && s.cfg.Replay[s.seq].Kind == EventMark {
		s.hand.pending = append(s.hand.pending, s.cfg.Replay[s.seq].marked())
		s.seq++
	}
}

// keepMarks is called when the session leaves its replay (the stored events
// from its place on were dropped): the hand marks among rest stay part of the
// session (they are the user's, not measurements): pending now, and stored
// again at once, at the place the session has reached. A failure to store
// them is returned by the next record.
func (s *Session) keepMarks(rest []Event) {
	for _, e := range rest {
		if e.Kind != EventMark {
			continue
		}
		s.hand.pending = append(s.hand.pending, e.marked())
		if err := s.record(e); err != nil && s.recordErr == nil {
			s.recordErr = err
		}
	}
}

// byHand returns the hand mark of h, if any.
func (s *Session) byHand(h string) (Marked, bool) {
	m, ok := s.hand.by[h]
	return m, ok
}

// markedGood reports whether h was marked good by hand.
func (s *Session) markedGood(h string) bool {
	m, ok := s.byHand(h)
	return ok && m.Mark == bisect.Good
}

// markedBad reports whether h was marked bad by hand.
func (s *Session) markedBad(h string) bool {
	m, ok := s.byHand(h)
	return ok && m.Mark == bisect.Bad
}

// applyMarks applies the pending hand marks (a decision point of either
// search): each becomes a step of its own and a certain verdict, replacing a
// measured one. It reports whether any was applied.
func (s *Session) applyMarks() bool {
	s.takeMarks()
	if len(s.hand.pending) == 0 {
		return false
	}
	if s.hand.by == nil {
		s.hand.by = map[string]Marked{}
	}
	for _, m := range s.hand.pending {
		if m.Commit == s.cfg.Good || m.Commit == s.cfg.Bad {
			s.logf("hand mark of %.10s ignored: the endpoints are measured, not marked", m.Commit)
			continue
		}
		if s.bayes != nil && m.Mark != bisect.Skip {
			if err := s.bayes.model.Known(m.Commit, m.Mark == bisect.Bad); err != nil {
				s.logf("hand mark of %.10s %s ignored: %v", m.Commit, m.Mark, err)
				continue
			}
		}
		if s.bayes != nil && m.Mark == bisect.Skip {
			s.bayes.model.Forget(m.Commit) // a good or bad mark before it no longer holds
			s.bayes.model.Untestable(m.Commit)
		}
		delete(s.res.Skipped, m.Commit)
		if m.Mark == bisect.Skip {
			s.res.Skipped[m.Commit] = "marked skip by hand: " + m.Reason
		}
		s.hand.by[m.Commit] = m
		s.hand.applied = append(s.hand.applied, m)
		s.res.Verdicts[m.Commit] = m.Mark.String()
		s.logf("%.10s: its mark by hand (%s) taken", m.Commit, m.Mark)
		s.step(Step{Role: RoleMidpoint, Commit: m.Commit, Against: s.cfg.Good, Verdict: MarkVerdict(m.Mark),
			Reason: "marked by hand: " + m.Reason, Hand: true})
	}
	s.hand.pending = nil
	if s.bayes == nil {
		s.rebuildSearch()
	}
	return true
}

// markMeasured gives the classic search a measured verdict (one a hand mark
// of the same commit overrides).
func (s *Session) markMeasured(h string, m bisect.Mark) {
	s.hand.measured = append(s.hand.measured, Marked{Commit: h, Mark: m})
	if _, ok := s.byHand(h); ok {
		return
	}
	s.search.Mark(h, m)
	s.res.Verdicts[h] = m.String()
}

// rebuildSearch makes the classic search again from the hand marks (first:
// they are certain) and the measured verdicts in order (a measured verdict
// that contradicts them is recorded and changes nothing; one on a commit
// marked by hand is left out).
func (s *Session) rebuildSearch() {
	search, err := bisect.NewSearchOptions(s.cfg.Commits, []string{s.cfg.Good}, s.cfg.Bad, bisect.Options{FirstParent: s.cfg.FirstParent})
	if err != nil {
		return // New built the same search
	}
	for _, m := range s.hand.applied {
		if s.hand.by[m.Commit] == m { // a commit marked again: its last mark
			search.Mark(m.Commit, m.Mark)
		}
	}
	for _, m := range s.hand.measured {
		if _, ok := s.byHand(m.Commit); !ok {
			search.Mark(m.Commit, m.Mark)
		}
	}
	s.search = search
}
