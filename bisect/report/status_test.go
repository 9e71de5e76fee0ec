package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
)

// TestStatusOfEndedSessions: the answer of an ended session is decoded from
// its stored document (a range, an undecided why, a failure's error), and
// an ended session offers no resume even when the caller passes one.
func TestStatusOfEndedSessions(t *testing.T) {
	subjects := func(h string) string { return "subject of " + h[:4] }
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		state   store.State
		outcome string
		result  string
		want    []string
	}{
		{store.Done, "ambiguous", `{"result":"ambiguous","first_bad":null,"range":["cccc1111","dddd2222"],"why":"a skipped commit borders it"}`,
			[]string{"session 7: done (ambiguous)", "  candidate: cccc1111 subject of cccc", "  candidate: dddd2222 subject of dddd", "a skipped commit borders it"}},
		{store.Done, "undecided", `{"result":"undecided","first_bad":null,"why":"undecided at the repeat limit (50 runs per side): good-bad shift -14.7% at 31.0% noise per run"}`,
			[]string{"session 7: done (undecided)", "undecided at the repeat limit (50 runs per side): good-bad shift -14.7% at 31.0% noise per run"}},
		{store.Failed, "error", `{"result":"error","first_bad":null,"why":"","error":"good endpoint cannot be measured: build failed"}`,
			[]string{"session 7: failed (error)", "error: good endpoint cannot be measured: build failed"}},
	} {
		x := &store.Session{ID: 7, Kind: store.KindStart, State: tc.state, Outcome: tc.outcome, Args: []string{"start", "--good", "g"},
			Good: "aaaa0000", Bad: "bbbb9999", Created: at, Updated: at, Result: []byte(tc.result)}
		var b strings.Builder
		WriteStatus(&b, Status{Session: x, Runs: 12, Subjects: subjects, Dir: "/state", Resume: "continue with: perfbisect resume",
			Steps: []session.Step{{Role: session.RoleEndpoints, Commit: "bbbb9999", Verdict: "UNKNOWN", Reason: "p=0.6"}}})
		out := b.String()
		for _, w := range tc.want {
			if !strings.Contains(out, w+"\n") {
				t.Errorf("%s: status lacks %q:\n%s", tc.outcome, w, out)
			}
		}
		if strings.Contains(out, "continue with") || !strings.Contains(out, "runs stored: 12; decisions: 1") {
			t.Errorf("%s: an ended session's status offers a resume, or miscounts:\n%s", tc.outcome, out)
		}
		b.Reset()
		WriteLog(&b, Status{Session: x, Subjects: subjects})
		if !strings.HasPrefix(b.String(), "# perfbisect session 7, "+string(tc.state)+", started 2026-12-02T10:00:00Z: perfbisect start --good g\n") ||
			!strings.Contains(b.String(), "git bisect start 'bbbb9999' 'aaaa0000'\n") {
			t.Errorf("%s: log:\n%s", tc.outcome, b.String())
		}
	}
}

// TestLogEndsOnTheFirstBadCommit: git keeps the last bad mark it is given,
// so a log whose verdicts put a newer bad commit after the first bad one
// (the probabilistic search writes them oldest first) marks the first bad
// commit again at the end, and git bisect replay ends there.
func TestLogEndsOnTheFirstBadCommit(t *testing.T) {
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	x := &store.Session{ID: 1, Kind: store.KindStart, State: store.Done, Outcome: "found", Args: []string{"start"},
		Good: "aaaa0000", Bad: "eeee0000", Created: at, Updated: at,
		Result: []byte(`{"result":"found","first_bad":"cccc0000","why":"","left_out":[{"commit":"dddd0000","subject":"docs","changes":"README","verdict":"bad"}]}`)}
	steps := []session.Step{
		{Role: session.RoleMidpoint, Commit: "bbbb0000", Verdict: session.VerdictGood},
		{Role: session.RoleMidpoint, Commit: "cccc0000", Verdict: session.VerdictBad},
		{Role: session.RoleMidpoint, Commit: "ffff0000", Verdict: session.VerdictBad},
	}
	var b strings.Builder
	WriteLog(&b, Status{Session: x, Steps: steps, Subjects: func(string) string { return "s" }})
	var last string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "git bisect bad ") {
			last = strings.TrimPrefix(l, "git bisect bad ")
		}
	}
	if last != "cccc0000" || !strings.Contains(b.String(), "git bisect bad dddd0000\n") {
		t.Errorf("the log's last bad mark is %q, want the first bad commit cccc0000 (after the left-out dddd0000's):\n%s", last, b.String())
	}
}

// report --list names a comparison's sides as compare does: a revision by
// its short hash, one build under an option file by its argument and the
// file's name (from the ended session's document), an installed server
// being measured by the argument its identity keeps.
func TestSessionListNamesSides(t *testing.T) {
	ended, _ := json.Marshal(CompareDoc{BaseSide: &SideDoc{Arg: "HEAD", OptionFile: "/cnf/nostat.cnf"}, HeadSide: &SideDoc{Arg: "HEAD", OptionFile: "/cnf/stat.cnf"}})
	running, _ := json.Marshal(store.Identity{store.KeyHeadSide: "/usr: installed MariaDB 10.11.6 (/usr/sbin/mariadbd), /cnf/stat.cnf"})
	sessions := []*store.Session{
		{ID: 1, Kind: store.KindCompare, Good: "side-0a1b2c3d4e5f", Bad: "side-6a7b8c9d0e1f", Result: ended},
		{ID: 2, Kind: store.KindCompare, Good: strings.Repeat("ab", 20), Bad: "side-1234567890ab", Config: running},
	}
	var b strings.Builder
	if err := WriteSessionList(&b, sessions); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"HEAD [nostat.cnf]..HEAD [stat.cnf]", "ababababab../usr [stat.cnf]"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("session list lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "side-") {
		t.Errorf("session list shows a side's key:\n%s", b.String())
	}
}
