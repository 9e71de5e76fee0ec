package report

import (
	"fmt"
	"io"
	"strings"
)

// Results of a setting search (SettingsDoc.Result).
const (
	SettingsFound       = "found"         // the settings that carry the regression (exit 5)
	SettingsNoneSlower  = "no-regression" // the bad option file is not slower beyond the threshold (exit 0)
	SettingsUnresolved  = "inconclusive"  // a test could not tell, and the search could not narrow (exit 4)
	SettingsSearchError = "error"         // the search stopped on an error
)

// SettingTest is one comparison a setting search made: the good option
// file with Settings changed to the bad file's values, against the good
// one.
type SettingTest struct {
	Settings []string `json:"settings"`
	Verdict  string   `json:"verdict"` // fails (slower), passes, unresolved
	Change   float64  `json:"change"`  // relative change of the metric's median
	Conf     float64  `json:"confidence"`
	Session  int64    `json:"session"` // the stored comparison
}

// SettingsDoc is the document of a setting search (perfbisect compare
// --which-setting): of the settings in which two option files differ on
// one server, the smallest set that carries the regression.
type SettingsDoc struct {
	Result   string   `json:"result"` // SettingsFound, SettingsNoneSlower, SettingsUnresolved, SettingsSearchError
	Error    string   `json:"error,omitempty"`
	Server   SideDoc  `json:"server"`
	Good     string   `json:"good_option_file"`
	Bad      string   `json:"bad_option_file"`
	Metric   string   `json:"metric"`
	Changes  []string `json:"changes"` // every setting that differs ("name=a -> b", "+name=b", "-name=a")
	Refused  []string `json:"refused"` // settings the server does not know, with its message: left out
	Minimal  []string `json:"minimal"` // the smallest set of changes that carries the regression
	Together bool     `json:"together"`
	// Alone is the change each setting of Minimal makes by itself (when
	// Minimal has two or more).
	Alone    []SettingTest `json:"alone,omitempty"`
	Tests    []SettingTest `json:"tests"`
	Workload string        `json:"workload"`
	Threads  int           `json:"threads"`
}

// WriteSettings renders doc in format: text or markdown (the answer, the
// settings left out, then every test), or json; junit is refused.
func WriteSettings(w io.Writer, format string, doc SettingsDoc) error {
	if format == "junit" {
		return fmt.Errorf("--format junit is for comparisons: a setting search renders as text, markdown or json")
	}
	if format == "json" {
		return writeIndented(w, doc)
	}
	md := format == "markdown"
	if md {
		fmt.Fprintf(w, "### perfbisect compare --which-setting: %s\n\n", doc.Result)
	}
	fmt.Fprintf(w, "server: %s\ngood option file: %s\nbad option file: %s\nworkload: %s\n", doc.Server.line(), doc.Good, doc.Bad, doc.Workload)
	fmt.Fprintf(w, "settings that differ (%d): %s\n", len(doc.Changes), strings.Join(doc.Changes, "; "))
	for _, r := range doc.Refused {
		fmt.Fprintf(w, "left out: %s\n", r)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, settingsAnswer(doc))
	for _, a := range doc.Alone {
		fmt.Fprintf(w, "  %s alone: %s, %+.1f%% %s\n", strings.Join(a.Settings, ", "), a.Verdict, 100*a.Change, doc.Metric)
	}
	fmt.Fprintln(w)
	rows := [][]string{}
	for i, t := range doc.Tests {
		rows = append(rows, []string{fmt.Sprint(i + 1), strings.Join(t.Settings, ", "), t.Verdict, fmt.Sprintf("%+.1f%%", 100*t.Change),
			fmt.Sprintf("%.4g%%", 100*t.Conf), fmt.Sprint(t.Session)})
	}
	table(w, md, []string{"test", "bad file's values of", "verdict", "change", "confidence", "session"}, rows)
	return nil
}

// settingsAnswer is the search's answer in one line.
func settingsAnswer(doc SettingsDoc) string {
	switch doc.Result {
	case SettingsFound:
		if doc.Together {
			return fmt.Sprintf("FOUND: %s hurt only together (none of them does alone)", strings.Join(doc.Minimal, " and "))
		}
		if len(doc.Minimal) == 1 {
			return fmt.Sprintf("FOUND: %s carries the regression", doc.Minimal[0])
		}
		return fmt.Sprintf("FOUND: %s carry the regression", strings.Join(doc.Minimal, ", "))
	case SettingsNoneSlower:
		return "no regression: the bad option file is not slower than the good one beyond the threshold, so no setting carries one"
	case SettingsUnresolved:
		return "INCONCLUSIVE: the comparisons could not tell where the regression is (more runs: --max-repeats)"
	}
	return "ERROR: " + doc.Error
}
