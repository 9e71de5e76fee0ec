package app

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
)

// A perfbisect run session ends when git's side says so: found when
// BISECT_LOG of its bisection names the first bad commit (with the stored
// decisions and runs), abandoned when BISECT_LOG is gone without it or is
// another bisection's; while git bisects it stays running.
func TestRunSessionEndsWithGitBisect(t *testing.T) {
	repo, shas, g := gitRepo(t, 4)
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	begin := func() *store.Session {
		t.Helper()
		s, err := st.Begin(store.KindRun, []string{"run"}, repo, shas[0], shas[3], store.Identity{"repo": repo, "metric": "tps"})
		if err != nil {
			t.Fatal(err)
		}
		r := bisect.Run{Commit: shas[2], TPS: 100}
		if err := st.Append(s.ID, 0, session.Event{Kind: session.EventRun, Commit: shas[2], Run: &r}); err != nil {
			t.Fatal(err)
		}
		step := session.Step{Role: session.RoleMidpoint, Commit: shas[2], Verdict: "bad", Reason: "like bad"}
		if err := st.AddStep(s.ID, 0, step); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := begin()
	if x, err := EndRunSession(st, s); err != nil || x.State != store.Reset || x.Outcome != "abandoned" {
		t.Errorf("no git bisection: %+v, %v; want reset (abandoned)", x, err)
	}
	s = begin()
	g("bisect", "start", shas[3], shas[0])
	if x, _ := EndRunSession(st, s); x.State != store.Running {
		t.Errorf("while git bisects: %s, want running", x.State)
	}
	g("bisect", "bad", shas[2])
	out := g("bisect", "bad", shas[1])
	if !strings.Contains(out, shas[1]+" is the first bad commit") {
		t.Fatalf("git bisect: %s", out)
	}
	x, err := EndRunSession(st, s)
	if err != nil || x.State != store.Done || x.Outcome != "found" {
		t.Fatalf("after git named the first bad commit: %+v, %v", x, err)
	}
	var doc struct {
		FirstBad *string `json:"first_bad"`
		Tested   []struct{ Commit, Verdict string }
		Steps    []struct{ Commit string }
	}
	if err := json.Unmarshal(x.Result, &doc); err != nil || doc.FirstBad == nil || *doc.FirstBad != shas[1] || len(doc.Steps) != 1 || len(doc.Tested) != 1 || doc.Tested[0].Verdict != "bad" {
		t.Errorf("document: %s (%v)", x.Result, err)
	}
	// Another bisection's log (other endpoints) does not end a session as
	// found: that session's bisection was reset unseen.
	s = begin()
	g("bisect", "reset")
	g("bisect", "start", shas[3], shas[1])
	g("bisect", "bad", shas[2])
	if x, _ := EndRunSession(st, s); x.State != store.Reset || x.Outcome != "abandoned" {
		t.Errorf("with another bisection's log: %s (%s), want reset (abandoned)", x.State, x.Outcome)
	}
}
