package main

// Golden files of what perfbisect prints for stored sessions and for --help:
// the store of an older perfbisect (schema version 1, made by
// scripts/make-store-fixture.sh) is migrated, then shown by status, log and
// report in every format; a change of any of them shows as a diff. Run
// `go test ./cmd/perfbisect -run Golden -update` to accept a change on purpose
// (and say why in the commit).

import (
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/bisect/store"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// v1Store copies the schema-version-1 store into a new state directory and
// makes the 6-commit fixture its sessions were measured on; the sessions'
// directory, the repository in their identity and their key are moved to the
// fixture's place here (the fixture's commits are the same on every machine).
// It returns the state directory, the repository and the old root the store
// named.
func v1Store(t *testing.T) (state, repo, oldRoot string) {
	t.Helper()
	repo, _ = makeFixture(t, "-n", "6", "--culprit-pos", "4", "--broken-pos", "0")
	root := filepath.Dir(repo)
	state = t.TempDir()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "bisect", "store", "testdata", "v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, store.FileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(state, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != 1 {
		t.Fatalf("testdata/v1.db has schema version %d (%v), want 1", version, err)
	}
	if err := db.QueryRow(`SELECT dir FROM sessions ORDER BY id LIMIT 1`).Scan(&oldRoot); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT id, key, config FROM sessions`)
	if err != nil {
		t.Fatal(err)
	}
	moved := map[int64]map[string]string{}
	for rows.Next() {
		var id int64
		var k, config string
		if err := rows.Scan(&id, &k, &config); err != nil {
			t.Fatal(err)
		}
		var identity map[string]string
		if err := json.Unmarshal([]byte(config), &identity); err != nil {
			t.Fatal(err)
		}
		// The key the older perfbisect stored is today's Identity.Key.
		if k != store.Identity(identity).Key() {
			t.Fatalf("session %d: stored key %s, Identity.Key %s", id, k, store.Identity(identity).Key())
		}
		for k, v := range identity {
			identity[k] = strings.ReplaceAll(v, oldRoot, root)
		}
		moved[id] = identity
	}
	rows.Close()
	for id, identity := range moved {
		c, _ := json.Marshal(identity)
		if _, err := db.Exec(`UPDATE sessions SET dir = ?, config = ?, key = ? WHERE id = ?`, root, string(c), store.Identity(identity).Key(), id); err != nil {
			t.Fatal(err)
		}
	}
	return state, repo, oldRoot
}

// golden compares got with testdata/golden/name (or writes it with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from %s (run with -update if the change is meant):\n--- want\n%s\n--- got\n%s", name, path, want, got)
	}
}

// TestGoldenStoredSessions: a store of schema version 1 with a finished and an
// unfinished start, a compare, a scan and a git bisect run session opens
// (migrated to today's version) and is shown as before by status, log and
// report in every format.
func TestGoldenStoredSessions(t *testing.T) {
	testenv.Require(t, testenv.Git)
	state, repo, _ := v1Store(t)
	root := filepath.Dir(repo)
	norm := func(s string) string {
		return strings.NewReplacer(state, "$STATE", root, "$ROOT").Replace(s)
	}
	env := []string{"TZ=UTC"}
	show := func(name string, want int, args ...string) result {
		t.Helper()
		r := perfbisect(t, env, append(args, "--state-dir", state)...)
		if r.code != want {
			t.Errorf("perfbisect %s: exit %d, want %d: %s", strings.Join(args, " "), r.code, want, r.stderr)
		}
		golden(t, name, norm(r.stdout))
		return r
	}
	list := show("report-list.txt", 0, "report", "--list")
	// Sessions 1 finished start, 2 compare, 3 scan, 4 git bisect run, 5 the
	// unfinished start; the run session is found abandoned (no BISECT_LOG in
	// the fixture here).
	for _, want := range []string{`1 +start +done +found`, `2 +compare +done +regression`, `3 +scan +done +changes`, `4 +run +reset +abandoned`, `5 +start +running`} {
		if !regexp.MustCompile(`(?m)^` + want + ` `).MatchString(list.stdout) {
			t.Errorf("report --list lacks %q", want)
		}
	}
	st, err := store.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	var version int
	st.Close()
	db, _ := sql.Open("sqlite", filepath.Join(state, store.FileName))
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != store.SchemaVersion {
		t.Errorf("after opening: schema version %d (%v), want %d", version, err, store.SchemaVersion)
	}
	db.Close()

	for _, c := range []struct {
		id      string
		formats []string
	}{
		{"1", []string{"text", "markdown", "json"}},
		{"2", []string{"text", "markdown", "json", "junit"}},
		{"3", []string{"text", "json"}},
	} {
		for _, f := range c.formats {
			r := show("report-"+c.id+"."+f, 0, "report", c.id, "--format", f)
			if f == "json" && !json.Valid([]byte(r.stdout)) {
				t.Errorf("report %s --format json is not JSON", c.id)
			}
			// A bisection's text and markdown are a bug report: git's
			// line, the endpoints with intervals, each commit's change,
			// how it was measured, the options with secrets redacted.
			if c.id == "1" && f != "json" {
				for _, want := range []string{"7965ac054db63aa1d4a93edbd383089f3de16b9d is the first bad commit", "good 7728954680 688 [",
					"change vs good in its blocks", "(against ", "perfbisect start --repo server", "server: MariaDB 10.11.19", "cpu_model=AMD EPYC",
					"--innodb-buffer-pool-size=256M", "builds: 5 (0 failed)"} {
					if !strings.Contains(r.stdout, want) {
						t.Errorf("report 1 --format %s lacks %q", f, want)
					}
				}
			}
		}
		html := filepath.Join(t.TempDir(), "r.html")
		if r := perfbisect(t, env, "report", c.id, "--html", html, "--state-dir", state); r.code != 0 {
			t.Errorf("report %s --html: exit %d", c.id, r.code)
		} else if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "<canvas") {
			t.Errorf("report %s --html wrote no page with charts: %v", c.id, err)
		}
	}
	// The git bisect run session was reset by git before perfbisect saw its
	// end: abandoned, with the placements it made.
	if r := show("report-4.text", 0, "report", "4"); !strings.Contains(r.stdout, "abandoned") || !regexp.MustCompile(`(?m)^midpoint +[0-9a-f]{10} +(good|bad) `).MatchString(r.stdout) {
		t.Errorf("report of the abandoned git bisect run session lacks its placements")
	}
	s := show("status.txt", 0, "status")
	if !strings.Contains(s.stdout, "session 5: unfinished (interrupted") || !strings.Contains(s.stdout, "perfbisect resume --state-dir "+state) {
		t.Errorf("status does not show the unfinished start with how to resume it")
	}
	show("log.txt", 0, "log")
}

// helpCommands are the commands whose --help is kept: perfbisect's own
// ("") and every command of the application, in its order (so that a new
// command cannot be left out of docs/cli.md).
func helpCommands() []string {
	out := []string{""}
	for _, c := range newApp().Commands {
		if !c.Hidden && c.Name != "help" {
			out = append(out, c.Name)
		}
	}
	return out
}

// versionLine is the help's version, which names the commit the test binary
// was built from: kept as the release alone.
var versionLine = regexp.MustCompile(`(?m)^(VERSION:\n   )` + regexp.QuoteMeta(release) + `.*$`)

// helpText is what `perfbisect [command] --help` prints, with its exit code
// checked (run's exits 128 on purpose: under git bisect run, 0 would mark the
// commit good).
func helpText(t *testing.T, c string) string {
	t.Helper()
	args := []string{"--help"}
	if c != "" {
		args = []string{c, "--help"}
	}
	want := 0
	if c == "run" {
		want = 128
	}
	r := perfbisect(t, nil, args...)
	if r.code != want {
		t.Errorf("perfbisect %s: exit %d, want %d", strings.Join(args, " "), r.code, want)
	}
	return versionLine.ReplaceAllString(r.stdout, "${1}"+release)
}

// TestGoldenHelp: every command's --help, as a user reads it, and
// docs/cli.md, which is all of them: a change of a command's help that the
// page does not follow fails here (-update rewrites both).
func TestGoldenHelp(t *testing.T) {
	var doc strings.Builder
	doc.WriteString("# perfbisect command-line reference\n\n" +
		"Every command's `--help`, as the binary prints it. Generated by `go test ./cmd/perfbisect -run GoldenHelp -update`\n" +
		"(TestGoldenHelp fails when a command's help and this page differ); do not edit by hand.\n\n")
	for _, c := range helpCommands() {
		name := "help.txt"
		title := "perfbisect"
		if c != "" {
			name, title = "help-"+c+".txt", "perfbisect "+c
		}
		text := helpText(t, c)
		golden(t, name, text)
		fmt.Fprintf(&doc, "## %s\n\n```\n%s```\n\n", title, text)
	}
	path := filepath.Join(repoRoot(t), "docs", "cli.md")
	got := strings.TrimRight(doc.String(), "\n") + "\n"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want, err := os.ReadFile(path); err != nil || string(want) != got {
		t.Errorf("docs/cli.md is not the commands' help (%v): run go test ./cmd/perfbisect -run GoldenHelp -update", err)
	}
}

// TestHelpConventions: help as a command, a mistyped command named with the
// nearest one, --version with the commit, the exit-code table in the help of
// every command but run.
func TestHelpConventions(t *testing.T) {
	if r := perfbisect(t, nil, "help", "start"); r.code != 0 || !strings.Contains(r.stdout, "perfbisect start - ") {
		t.Errorf("perfbisect help start: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := perfbisect(t, nil, "strat", "--good", "x"); r.code != exitUsage || !strings.Contains(r.stderr, `"strat" is not a perfbisect command`) || !strings.Contains(r.stderr, "start") {
		t.Errorf("perfbisect strat: exit %d\n%s", r.code, r.stderr)
	}
	if r := perfbisect(t, nil, "start", "--thraeds", "2"); r.code != exitUsage || !strings.Contains(r.stdout+r.stderr, "--threads") {
		t.Errorf("start --thraeds: exit %d, no suggestion of --threads\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := perfbisect(t, nil, "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "perfbisect version "+release) {
		t.Errorf("--version: exit %d %q", r.code, r.stdout)
	}
	if out, err := exec.Command("git", "-C", repoRoot(t), "rev-parse", "HEAD").Output(); err == nil && !strings.Contains(r.stdout, "commit "+string(out[:12])) {
		t.Errorf("--version %q does not name the commit %s the binary was built from", r.stdout, out[:12])
	}
	for _, c := range helpCommands() {
		text := helpText(t, c)
		if has := strings.Contains(text, exitCodesHelp(c)); has != (c != "run" && c != "bench") {
			t.Errorf("perfbisect %s --help: exit-code table shown %v", c, has)
		}
	}
}

// TestResumeOfAnOlderStore: the start session an older perfbisect (schema
// version 1, before the probabilistic search) left unfinished resumes with
// today's binary, as the classic search it was begun with, keeps the runs
// stored before and names the culprit.
func TestResumeOfAnOlderStore(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	state, repo, _ := v1Store(t)
	culprit := fixtureVar(t, repo, "CULPRIT_SHA")
	_, before := storedRuns(t, state)
	if len(before) == 0 {
		t.Fatal("the unfinished session of testdata/v1.db has no runs")
	}
	// --no-explain: the stored start command did not have it; resume adds
	// it (the profiled runs are TestExplain's and TestBisectFindsInjectedRegression's).
	r := perfbisect(t, nil, "resume", "--state-dir", state, "--no-explain")
	if r.code != exitOK || !strings.Contains(r.stdout, "first bad commit: "+culprit) {
		t.Fatalf("resume: exit %d, want 0 naming %s", r.code, culprit)
	}
	if strings.Contains(r.stderr+r.stdout, "profiled run") {
		t.Errorf("resume --no-explain profiled the first bad commit")
	}
	if !strings.Contains(r.stderr, "runs stored are used") {
		t.Errorf("resume did not say it uses the stored runs")
	}
	var doc struct {
		Search string `json:"search"`
	}
	rep := perfbisect(t, nil, "report", "5", "--format", "json", "--state-dir", state)
	if err := json.Unmarshal([]byte(rep.stdout), &doc); err != nil || doc.Search != "classic" {
		t.Errorf("the resumed session's search: %q (%v), want classic, as it was begun", doc.Search, err)
	}
	sess, after := storedRuns(t, state)
	if sess.State != store.Done || sess.Outcome != "found" || len(after) < len(before) || !slices.Equal(after[:len(before)], before) {
		t.Errorf("after resume: %s %s, %d runs (had %d; the stored ones must stay)", sess.State, sess.Outcome, len(after), len(before))
	}
}
