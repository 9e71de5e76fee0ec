package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/stats"
)

func sha(c byte) string { return strings.Repeat(string(c), 40) }

func TestDocumentAndFinal(t *testing.T) {
	good, bad, mid, broken := sha('a'), sha('b'), sha('c'), sha('d')
	t0 := time.Now()
	runs := func(h string, tps ...float64) []bisect.Run {
		var rs []bisect.Run
		for i, v := range tps {
			rs = append(rs, bisect.Run{Commit: h, TPS: v, Started: t0.Add(time.Duration(i) * time.Second)})
		}
		return rs
	}
	cmp := stats.Compare([]float64{100, 101, 102, 99, 100, 103}, []float64{50, 51, 52, 49, 50, 53}, 0.05, 0.01)
	cls := stats.Classify([]stats.Block{{Good: 100, Bad: 50, Cand: 49}}, 0.01)
	res := &session.Result{
		Outcome: session.Found, FirstBad: mid, Why: "confirmed",
		Runs:     map[string][]bisect.Run{good: runs(good, 100, 0, 101), bad: runs(bad, 50, 51), mid: runs(mid, 49)},
		Verdicts: map[string]string{good: "good", bad: "bad", mid: "bad"},
		Skipped:  map[string]string{broken: "build failed"},
		Steps: []session.Step{
			{Role: session.RoleEndpoints, Commit: bad, Against: good, Verdict: "DIFFERENT", Compare: &cmp},
			{Role: session.RoleMidpoint, Commit: broken, Verdict: "skip", Reason: "build failed"},
			{Role: session.RoleMidpoint, Commit: mid, Verdict: "bad", Class: &cls},
		},
		Budget: stats.Budget{Confidence: 0.95},
	}
	subjects := func(h string) string { return "subject of " + h[:4] }
	d := NewDocument(res, session.TPS, subjects)
	path := filepath.Join(t.TempDir(), "r.json")
	if err := WriteJSON(path, d); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["result"] != "found" || got["first_bad"] != mid {
		t.Errorf("result %v first_bad %v", got["result"], got["first_bad"])
	}
	tested := got["tested"].([]any)
	if len(tested) != 4 {
		t.Fatalf("%d tested entries, want 4 (3 measured + 1 skipped)", len(tested))
	}
	byCommit := map[string]map[string]any{}
	for _, e := range tested {
		m := e.(map[string]any)
		byCommit[m["commit"].(string)] = m
	}
	if v := byCommit[broken]; v["verdict"] != "skip" || v["skipped"] != "build failed" || len(v["runs"].([]any)) != 0 {
		t.Errorf("skipped entry: %v", v)
	}
	// A run without transactions (rejected and retried) is kept as evidence
	// but not in the median.
	if v := byCommit[good]; v["median"].(float64) != 100.5 || len(v["runs"].([]any)) != 3 {
		t.Errorf("good entry: %v", v)
	}
	// Unbounded intervals (too few runs) are null, not invalid JSON.
	if strings.Contains(string(b), "Inf") {
		t.Error("JSON holds an infinite number")
	}
	// perfbisect report renders the stored document again.
	var back Document
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"text", "markdown"} {
		var w bytes.Buffer
		if err := WriteBisectReport(&w, f, Page{Bisect: &back}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(w.String(), "first bad commit: "+mid) || !strings.Contains(w.String(), "build failed") && !strings.Contains(w.String(), "skip") ||
			strings.Count(w.String(), "cccccccccc") < 2 {
			t.Errorf("%s rendering:\n%s", f, w.String())
		}
	}
	var out bytes.Buffer
	Final(&out, res, subjects)
	if !strings.HasPrefix(out.String(), "first bad commit: "+mid+" subject of cccc\n") {
		t.Errorf("final line: %q", out.String())
	}
	res.Outcome, res.FirstBad, res.Range = session.Ambiguous, "", []string{mid, broken}
	out.Reset()
	Final(&out, res, subjects)
	if !strings.Contains(out.String(), "ambiguous") || !strings.Contains(out.String(), "skipped: build failed") {
		t.Errorf("ambiguous output: %q", out.String())
	}
}

// TestTableColors: a coloured table wraps each verdict in its colour with the
// padding inside, so the columns line up exactly as in the plain table.
func TestTableColors(t *testing.T) {
	good, bad := sha('a'), sha('b')
	cmp := stats.Compare([]float64{100, 101, 102, 99, 100, 103}, []float64{50, 51, 52, 49, 50, 53}, 0.05, 0.01)
	st := session.Step{Role: session.RoleEndpoints, Commit: bad, Against: good, Verdict: "DIFFERENT", Compare: &cmp}
	runs := map[string][]bisect.Run{good: {{TPS: 100}}, bad: {{TPS: 50}}}
	subjects := func(h string) string { return "subject" }
	var plain, colored bytes.Buffer
	(&Table{W: &plain, Subjects: subjects, Metric: session.TPS}).Step(st, runs)
	(&Table{W: &colored, Subjects: subjects, Metric: session.TPS, Color: true}).Step(st, runs)
	if strings.Contains(plain.String(), "\x1b[") {
		t.Errorf("plain table has escape codes: %q", plain.String())
	}
	c := colored.String()
	if !strings.Contains(c, "\x1b[32mgood     \x1b[0m") || !strings.Contains(c, "\x1b[31mbad      \x1b[0m") {
		t.Errorf("coloured verdicts: %q", c)
	}
	stripped := strings.NewReplacer("\x1b[32m", "", "\x1b[31m", "", "\x1b[33m", "", "\x1b[0m", "").Replace(c)
	if stripped != plain.String() {
		t.Errorf("colours change the layout:\n%s\n%s", stripped, plain.String())
	}
}

// TestCheckWritable: a report path in a missing directory or in one that
// cannot be written is refused naming the path and the directory, never the
// probe's temporary file; a writable one leaves nothing behind.
func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	if err := CheckWritable("json", filepath.Join(dir, "r.json")); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the probe left %v", ents)
	}
	err := CheckWritable("json", filepath.Join(dir, "nope", "r.json"))
	if err == nil || !strings.Contains(err.Error(), "--json "+filepath.Join(dir, "nope", "r.json")) ||
		!strings.Contains(err.Error(), "directory "+filepath.Join(dir, "nope")+" does not exist") || strings.Contains(err.Error(), ".perfbisect-") {
		t.Errorf("missing directory: %v", err)
	}
	if err := CheckWritable("html", dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
}

// TestBisectReport: a commit's change is measured against the good runs of
// its own blocks (from the last good run before its first to the first good
// run after its last), git's line is there, and secret option values are
// redacted.
func TestBisectReport(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	run := func(c string, at float64, tps float64) bisect.Run {
		return bisect.Run{Commit: c, TPS: tps, Started: t0.Add(time.Duration(at * float64(time.Second))), Facts: map[string]string{"server": "MariaDB 10.11.19", "cpus": "2"}}
	}
	var good, bad, cand []bisect.Run
	for i := 0; i < 10; i++ {
		// The machine slows down half-way: good runs fall from 1000 to 800.
		g := 1000.0
		if i >= 5 {
			g = 800
		}
		good = append(good, run("g", float64(3*i), g+float64(i)))
		bad = append(bad, run("b", float64(3*i+1), 0.5*g))
	}
	for _, at := range []float64{19.5, 20.5, 22.5} { // in the slow half: like good there
		cand = append(cand, run("c", at, 800))
	}
	if got := goodInBlocks(good, cand); len(got) != 3 || got[0].Started != good[6].Started || got[2].Started != good[8].Started {
		t.Fatalf("good runs in the candidate's blocks: %v", got)
	}
	fb := "c"
	p0, p1, p2 := 0, 1, 2
	d := Document{Result: "found", Good: "g", Bad: "b", FirstBad: &fb, Metric: "tps", Why: "why",
		Tested: []TestedCommit{{Commit: "g", Verdict: "good", Runs: good, Position: &p0}, {Commit: "b", Verdict: "bad", Runs: bad, Position: &p2}, {Commit: "c", Verdict: "bad", Runs: cand, Position: &p1}}}
	var w bytes.Buffer
	p := Page{Command: "perfbisect start --good g --bad b", Bisect: &d, Options: []OptionsText{{Commit: "g", Text: "--port=3306\n--wsrep_sst_auth=root:secret"}}}
	if err := WriteBisectReport(&w, "text", p); err != nil {
		t.Fatal(err)
	}
	out := w.String()
	for _, want := range []string{"c is the first bad commit", "server: MariaDB 10.11.19", "--wsrep_sst_auth=<redacted>", "(against 3 good runs)", "perfbisect start --good g --bad b"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "root:secret") {
		t.Errorf("the report shows a secret:\n%s", out)
	}
	// Against the good runs of its blocks (about 807), the candidate is
	// about as fast as good; against all of them it would look 10% slow.
	if !regexp.MustCompile(`(?m)^c .* -[01]\.[0-9]% .*against 3 good runs`).MatchString(out) {
		t.Errorf("the candidate's change is not taken against its own blocks:\n%s", out)
	}
}
