package session

import (
	"errors"
	"fmt"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
)

// Event kinds.
const (
	EventPrepare = "prepare" // a revision was got ready before its runs, or found untestable then
	EventRun     = "run"     // a run, or a revision found untestable during one
)

// Event is one thing a session measured, in the order it happened: what the
// store keeps so that an interrupted session can be resumed. A run event has Run
// set, or Reason (the revision was untestable); a prepare event has Reason set
// when the revision was untestable.
type Event struct {
	Kind   string      // EventPrepare or EventRun
	Commit string      // full hash
	Run    *bisect.Run `json:",omitempty"`
	Reason string      `json:",omitempty"` // bisect.UntestableError.Reason
	Err    string      `json:",omitempty"` // its evidence, as text
	// Took is how long a prepare took (the build, the datadir): the
	// probabilistic search weighs builds by it, so a resumed session needs
	// the stored time to choose as the interrupted one did.
	Took time.Duration `json:",omitempty"`
	// Mark is the verdict of a hand mark (Kind EventMark): good, bad or
	// skip; its Reason is the user's.
	Mark string `json:",omitempty"`
}

// untestable turns an event's stored failure back into the error the session
// saw when it was live.
func (e Event) untestable() error {
	if e.Reason == "" {
		return nil
	}
	var err error
	if e.Err != "" {
		err = errors.New(e.Err)
	}
	return &bisect.UntestableError{Commit: e.Commit, Reason: e.Reason, Err: err}
}

// replayed returns the next stored event when it is the one the session asks
// for now (kind, commit); otherwise it leaves the replay for good.
func (s *Session) replayed(kind, commit string) (Event, bool) {
	if s.live {
		return Event{}, false
	}
	s.takeMarks()
	if s.seq < len(s.cfg.Replay) {
		e := s.cfg.Replay[s.seq]
		if e.Kind == kind && e.Commit == commit {
			s.seq++
			s.res.Replayed++
			return e, true
		}
		s.logf("resume: stored event %d (%s %.10s) is not what the session asks for now (%s %.10s): measuring from here on",
			s.seq, e.Kind, e.Commit, kind, commit)
		if s.cfg.Hooks.Diverged != nil {
			s.cfg.Hooks.Diverged(s.seq)
		}
		s.keepMarks(s.cfg.Replay[s.seq:])
	} else if s.res.Replayed > 0 {
		s.logf("resume: %d stored events replayed; measuring from here on", s.res.Replayed)
	}
	s.live = true
	return Event{}, false
}

// replayDone reports whether every stored event has been replayed: the
// runs asked for from here on are live.
func (s *Session) replayDone() bool {
	return s.live || s.seq >= len(s.cfg.Replay)
}

// record hands a live event to the store (Config.Record) before it is used;
// after a failure to store the hand marks a divergence kept (keepMarks) it
// returns that failure.
func (s *Session) record(e Event) error {
	if s.recordErr != nil {
		return s.recordErr
	}
	seq := s.seq
	s.seq++
	if s.cfg.Hooks.Record == nil {
		return nil
	}
	if err := s.cfg.Hooks.Record(seq, e); err != nil {
		return fmt.Errorf("recording %s of %.10s: %w", e.Kind, e.Commit, err)
	}
	return nil
}

// untestableEvent makes the event of an untestable revision, or reports false
// for any other error (which is not recorded: resuming retries it).
func untestableEvent(kind, commit string, err error) (Event, bool) {
	var u *bisect.UntestableError
	if !errors.As(err, &u) {
		return Event{}, false
	}
	e := Event{Kind: kind, Commit: commit, Reason: u.Reason}
	if u.Err != nil {
		e.Err = u.Err.Error()
	}
	return e, true
}
