package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
)

// TestLayoutsSaid: the answer, the bug report and the comparison say in
// which code layouts the runs measured their servers, from the runs' facts;
// runs of the build's own binary say nothing.
func TestLayoutsSaid(t *testing.T) {
	run := func(layout string) bisect.Run {
		r := bisect.Run{TPS: 100, Facts: map[string]string{}}
		if layout != "" {
			r.Facts[bisect.FactLayout] = layout
		}
		return r
	}
	own := []bisect.Run{run(""), run("")}
	perRun := []bisect.Run{run("seed 17"), run("seed 4"), run("seed 99")}
	kept := []bisect.Run{run("1 of 16"), run("7 of 16")}
	mixed := append(append(append([]bisect.Run{}, perRun...), kept...), own...)
	for _, c := range []struct {
		runs []bisect.Run
		want string
	}{
		{own, ""},
		{[]bisect.Run{run("odd"), {TPS: 1}}, ""}, // an unknown fact, no facts at all: the server's own
		{perRun, "a new one every run (the server relinked by ld.lld"},
		{kept, "16 per build, in turn (the server linked 16 times"},
		{mixed, "a new one in each of 3 runs, one of 16 kept per build in 2 runs, the server's own binary in 2 runs"},
	} {
		got := layoutsOf(c.runs)
		if (c.want == "") != (got == "") || !strings.HasPrefix(got, c.want) {
			t.Errorf("layouts of %d runs: %q, want %q...", len(c.runs), got, c.want)
		}
	}
	for _, c := range []struct {
		base, head []bisect.Run
		want       string
	}{
		{perRun, perRun, "a new one every run ("},
		{own, own, ""},
		{own, perRun, "base: the server's own binary (one layout: its level is part of the difference); head: a new one every run ("},
		{perRun, nil, "a new one every run ("}, // head not measured: nothing said of it
	} {
		if got := sidesLayouts(c.base, c.head); (c.want == "") != (got == "") || !strings.HasPrefix(got, c.want) {
			t.Errorf("sides' layouts: %q, want %q...", got, c.want)
		}
	}
	facts := hostFacts(mixed, layoutsOf(mixed))
	if i := slices.IndexFunc(facts, func(f [2]string) bool { return f[0] == "code layouts" }); i < 0 || slices.ContainsFunc(facts, func(f [2]string) bool { return f[0] == bisect.FactLayout }) {
		t.Errorf("the page's facts %q: want the code layouts said once, no seed by seed", facts)
	}

	var b bytes.Buffer
	Final(&b, &session.Result{Outcome: session.NoRegression, Runs: map[string][]bisect.Run{"a": perRun}}, func(string) string { return "" })
	if !strings.Contains(b.String(), "code layouts: a new one every run") {
		t.Errorf("the answer does not say the layouts:\n%s", b.String())
	}
	b.Reset()
	Final(&b, &session.Result{Outcome: session.NoRegression, Runs: map[string][]bisect.Run{"a": own}}, func(string) string { return "" })
	if strings.Contains(b.String(), "code layouts") {
		t.Errorf("runs of the build's own binary are said to use layouts:\n%s", b.String())
	}

	b.Reset()
	d := Document{Result: "no-regression", Good: "g", Bad: "b", Metric: "tps",
		Tested: []TestedCommit{{Commit: "g", Verdict: "good", Runs: kept}, {Commit: "b", Verdict: "good", Runs: kept}}}
	if err := WriteBisectReport(&b, "markdown", Page{Bisect: &d}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "- code layouts: 16 per build, in turn") {
		t.Errorf("the bug report does not say the layouts:\n%s", b.String())
	}

	// The HTML page of a comparison: each side's, as the text says them.
	doc := compareDoc(t, CompareRegression)
	for i := range doc.HeadRuns {
		doc.HeadRuns[i].Facts = map[string]string{bisect.FactLayout: bisect.LayoutSeed(int64(i))}
	}
	b.Reset()
	if err := WriteHTML(&b, Page{Compare: []CompareDoc{doc}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "base: the server&#39;s own binary") || !strings.Contains(b.String(), "head: a new one every run") {
		t.Errorf("the comparison's page does not say each side's layouts")
	}

	for _, format := range []string{"text", "markdown"} {
		doc := compareDoc(t, CompareRegression)
		for _, runs := range [][]bisect.Run{doc.BaseRuns, doc.HeadRuns} {
			for i := range runs {
				runs[i].Facts = map[string]string{bisect.FactLayout: bisect.LayoutSeed(int64(i))}
			}
		}
		b.Reset()
		if err := WriteCompare(&b, format, doc); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.ToLower(b.String()), "code layouts: a new one every run") {
			t.Errorf("the %s comparison does not say the layouts:\n%s", format, b.String())
		}
	}
}
