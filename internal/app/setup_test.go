package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect/session"
)

// TestIdentityNamesWhatShapesTheAnswer: a changed workload field or policy
// changes the identity's key and is named in its Diff; extra entries are
// kept.
func TestIdentityNamesWhatShapesTheAnswer(t *testing.T) {
	s := &Setup{Bench: bench.DefaultOptions(), Driver: "builtin", Policy: session.Config{Repeats: 6, MaxRepeats: 100, Threshold: 0.05, Confidence: 0.99, Metric: session.TPS}}
	a := s.Identity("g", "b", map[string]string{"repo": "/src/server"})
	if a["repo"] != "/src/server" || a["good"] != "g" || a["workload Threads"] == "" {
		t.Fatalf("identity %v", a)
	}
	s.Bench.Threads++
	b := s.Identity("g", "b", map[string]string{"repo": "/src/server"})
	if a.Key() == b.Key() {
		t.Fatal("a changed thread count keeps the key: runs of another workload would be reused")
	}
	if d := a.Diff(b); !strings.Contains(d, "Threads") {
		t.Errorf("Diff = %q, want it to name Threads", d)
	}
}

func TestSessionError(t *testing.T) {
	dir := t.TempDir()
	if err := SessionError(errors.New("x"), true, dir, ""); OutcomeOf(err) != Interrupted || !strings.Contains(err.Error(), "perfbisect resume --state-dir "+dir) {
		t.Errorf("interrupted: %v", err)
	}
	if err := SessionError(&session.EndpointError{Which: "good", Err: errors.New("does not build")}, false, dir, ""); OutcomeOf(err) != Usage {
		t.Errorf("an endpoint that cannot be measured: %v, want usage", err)
	}
	err := SessionError(errors.New("store: database or disk is full (13)"), false, dir, "")
	if OutcomeOf(err) != Failure || !strings.Contains(err.Error(), "is full") || !strings.Contains(err.Error(), "the session is kept") {
		t.Errorf("a full disk: %v", err)
	}
}
