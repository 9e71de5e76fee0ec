package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/ddmin"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/serverctl"
)

// WhichSetting answers "which setting is it" for one server under two
// option files (compare SIDE SIDE --my-cnf good.cnf --my-cnf bad.cnf
// --which-setting): of the settings in which the files differ for that
// server's groups, it finds the smallest set that carries the regression
// with delta debugging (package ddmin), each test the comparison compare
// makes between the good file and the good file with some settings changed
// to the bad file's values, stored as a compare session (a search run
// again reuses its tests). The error budget is spent over the tests
// (ddmin.Conf). Settings the server does not know are named and left out.
// It returns the document (with Result "" when the input was refused),
// the tests' session ids, and the outcome: nil (the bad file is not
// slower), Answer(Regression) with the settings found, Answer(Undecided),
// a usage error, an interruption or a failure.
func WhichSetting(ctx context.Context, su *Setup, req CompareRequest) (report.SettingsDoc, []int64, error) {
	var doc report.SettingsDoc
	base, err := oneServerTwoFiles(ctx, su, req)
	if err != nil {
		return doc, nil, err
	}
	goodSet, changes, err := settingChanges(su, base)
	if err != nil {
		return doc, nil, err
	}
	if err := su.Lock(req.StateDir); err != nil {
		return doc, nil, err
	}
	if len(req.Threads) == 1 {
		su.Workload = su.Workload.WithThreads(req.Threads[0])
	}
	doc = report.SettingsDoc{Good: su.SideOptionFiles[0].Path, Bad: su.SideOptionFiles[1].Path, Metric: string(su.Policy.Metric),
		Workload: su.Workload.Summary(), Threads: su.Workload.Threads(), Changes: []string{}, Refused: []string{}, Minimal: []string{}, Tests: []report.SettingTest{}}
	in, err := sideServer(ctx, su, base)
	if err != nil {
		return fail(doc, err)
	}
	doc.Server = report.SideDoc{Arg: base.Arg, What: sideWhat(base), Server: in.Server, Version: in.VersionLine}
	known, err := knownChanges(ctx, in, changes, &doc)
	if err != nil {
		return fail(doc, err)
	}
	if len(known) == 0 {
		return doc, nil, usageError("{my-cnf} %s: every setting in which it differs from %s is one this server does not know (%s): nothing to search; the server cannot start with it",
			su.SideOptionFiles[1].Path, su.SideOptionFiles[0].Path, strings.Join(doc.Refused, "; "))
	}
	fmt.Fprintf(su.Log, "which setting: %d settings differ (%d left out); comparing %s with some of them changed to %s's values\n",
		len(changes), len(changes)-len(known), su.SideOptionFiles[0].Path, su.SideOptionFiles[1].Path)
	su.useSides([]Side{base})
	st := &settingTests{su: su, base: base, goodSet: goodSet, known: known, args: req.Args, doc: &doc}
	for _, c := range known {
		st.names = append(st.names, c.String())
	}
	res, err := ddmin.Minimize(ctx, len(known), su.Policy.Confidence, st.test)
	if err != nil {
		if ctx.Err() != nil {
			return doc, st.ids, With(Interrupted, errors.New("interrupted; no server left running. The same command continues it, measuring nothing twice"))
		}
		var ee *session.EndpointError
		if errors.As(err, &ee) || errors.Is(err, bisect.ErrUsage) || errors.Is(err, serverctl.ErrOptionFile) {
			doc.Result, doc.Error = report.SettingsSearchError, err.Error()
			return doc, st.ids, With(Usage, err) // a value the server refuses: the user's files
		}
		d, _, e := fail(doc, err)
		return d, st.ids, e
	}
	return settingsAnswer(doc, res, st.names), st.ids, settingsOutcome(res)
}

// oneServerTwoFiles returns the side a which-setting search compares with
// itself under two option files. Errors: usage when the sides are not one
// server twice with an option file each, or more than one thread count.
func oneServerTwoFiles(ctx context.Context, su *Setup, req CompareRequest) (Side, error) {
	sides, err := ResolveSides(ctx, su, req.Sides)
	if err != nil {
		return Side{}, err
	}
	base, bad := sides[0], sides[len(sides)-1]
	if len(sides) != 2 || len(su.SideOptionFiles) != 2 || base.Spec.Commit != bad.Spec.Commit || base.Tree != bad.Tree || base.Spec.Basedir != bad.Spec.Basedir {
		return Side{}, usageError("{which-setting} is for one server under two option files: perfbisect compare SIDE SIDE --my-cnf good.cnf --my-cnf bad.cnf --which-setting (the same side twice)")
	}
	if len(req.Threads) > 1 {
		return Side{}, usageError("{which-setting} searches at one thread count: give {threads}, not {thread-list}")
	}
	if err := su.checkSides(sides); err != nil {
		return Side{}, err
	}
	// The good file only: a setting of the bad one its server does not
	// know is the search's to name and leave out.
	return base, askInstalled(ctx, sides[:1])
}

// settingChanges returns the settings the first option file gives base's
// server and the changes the second makes to them. Errors: usage for an
// option file that cannot be read, or two that give the same settings.
func settingChanges(su *Setup, base Side) (*serverctl.OptionFileSet, []serverctl.SettingChange, error) {
	var groups []string
	var err error
	if base.Install != nil {
		groups = serverctl.ServerGroups(base.Install)
	} else if groups, err = treeGroups(base.Repo, base.Spec.Commit); err != nil {
		return nil, nil, With(Failure, err)
	}
	goodSet, err := su.SideOptionFiles[0].Groups(groups)
	if err != nil {
		return nil, nil, usageError("{my-cnf}: %w", err)
	}
	badSet, err := su.SideOptionFiles[1].Groups(groups)
	if err != nil {
		return nil, nil, usageError("{my-cnf}: %w", err)
	}
	changes := serverctl.DiffSettings(goodSet, badSet)
	if len(changes) == 0 {
		return nil, nil, usageError("{my-cnf} %s and %s give this server the same settings: nothing to search", su.SideOptionFiles[0].Path, su.SideOptionFiles[1].Path)
	}
	return goodSet, changes, nil
}

// knownChanges returns the changes whose setting the server knows; the
// others are left out, named in doc.Refused (every change is in
// doc.Changes).
func knownChanges(ctx context.Context, in *serverctl.Install, changes []serverctl.SettingChange, doc *report.SettingsDoc) ([]serverctl.SettingChange, error) {
	var known []serverctl.SettingChange
	for _, c := range changes {
		doc.Changes = append(doc.Changes, c.String())
		if c.To != nil {
			if err := in.Accepts(ctx, *c.To); errors.Is(err, serverctl.ErrUnknownSetting) {
				doc.Refused = append(doc.Refused, err.Error())
				continue
			} else if err != nil {
				return nil, err
			}
		}
		known = append(known, c)
	}
	return known, nil
}

// settingTests is the test ddmin runs: base's server under the first option
// file with a subset of the known changes applied, compared with it as it
// is. Each test is a compare session of its own (ids), in doc.Tests.
type settingTests struct {
	su      *Setup
	base    Side
	goodSet *serverctl.OptionFileSet
	known   []serverctl.SettingChange
	names   []string // known's, as the report names them
	args    []string // the command as typed
	doc     *report.SettingsDoc
	ids     []int64
}

func (st *settingTests) test(ctx context.Context, subset []int, conf float64) (ddmin.Verdict, float64, error) {
	su := st.su
	var chosen []serverctl.SettingChange
	for _, i := range subset {
		chosen = append(chosen, st.known[i])
	}
	of, err := combinedOptionFile(su.StateDir, serverctl.ApplyChanges(st.goodSet, chosen))
	if err != nil {
		return ddmin.Unresolved, 0, err
	}
	head := st.base
	head.Arg = fmt.Sprintf("%s with %s", filepath.Base(st.doc.Good), ddmin.Describe(subset, st.names))
	head.Spec.OptionFile = of
	head.Key = sideKey(head, true)
	head.Spec.Name = head.Arg
	su.Sides[head.Key] = head.Spec
	cfg := su.Policy
	cfg.Confidence = conf
	identity := pairIdentity(su, st.base, head)
	stored, err := su.Store.ByKey(store.KindCompare, identity.Key())
	if err != nil {
		return ddmin.Unresolved, 0, err
	}
	cd, id, _, err := compareOnce(ctx, su, cfg, st.args, st.base, head, identity, stored)
	if id > 0 {
		st.ids = append(st.ids, id)
	}
	if err != nil {
		return ddmin.Unresolved, 0, err
	}
	v := map[string]ddmin.Verdict{report.CompareRegression: ddmin.Fails, report.CompareInconclusive: ddmin.Unresolved}[cd.Result]
	change := 0.0
	for _, r := range cd.Rows {
		if r.Decides && r.Compare != nil {
			change = r.Compare.Shift.Est
		}
	}
	st.doc.Tests = append(st.doc.Tests, report.SettingTest{Settings: subsetNames(subset, st.names), Verdict: v.String(), Change: change, Conf: conf, Session: id})
	return v, change, nil
}

// settingsAnswer completes doc with ddmin's answer: the minimal set, the
// settings that are slower alone, and the result.
func settingsAnswer(doc report.SettingsDoc, res ddmin.Result, names []string) report.SettingsDoc {
	doc.Minimal, doc.Together = subsetNames(res.Minimal, names), res.Together
	for _, i := range res.Minimal {
		for _, t := range doc.Tests {
			if _, ok := res.Alone[i]; ok && len(t.Settings) == 1 && t.Settings[0] == names[i] {
				doc.Alone = append(doc.Alone, t)
			}
		}
	}
	switch {
	case len(res.Minimal) > 0:
		doc.Result = report.SettingsFound
	case len(res.Tests) > 0 && res.Tests[0].Verdict == ddmin.Unresolved:
		doc.Result = report.SettingsUnresolved
	default:
		doc.Result = report.SettingsNoneSlower
	}
	return doc
}

// settingsOutcome is a finished search's outcome: a regression when some
// settings are slower, undecided when the first test was, else nil.
func settingsOutcome(res ddmin.Result) error {
	switch {
	case len(res.Minimal) > 0:
		return Answer(Regression)
	case len(res.Tests) > 0 && res.Tests[0].Verdict == ddmin.Unresolved:
		return Answer(Undecided)
	}
	return nil
}

// fail ends doc with err (a failure).
func fail(doc report.SettingsDoc, err error) (report.SettingsDoc, []int64, error) {
	doc.Result, doc.Error = report.SettingsSearchError, err.Error()
	return doc, nil, With(Failure, err)
}

// subsetNames are the names of subset's changes.
func subsetNames(subset []int, names []string) []string {
	out := []string{}
	for _, i := range subset {
		out = append(out, names[i])
	}
	return out
}

// sideWhat says what a side resolved to, for documents.
func sideWhat(s Side) string {
	switch {
	case s.Install != nil:
		return fmt.Sprintf("installed %s %s", s.Install.Flavor, s.Install.Version)
	case s.Tree != "":
		return fmt.Sprintf("%.10s of %s", s.Spec.Commit, s.Tree)
	}
	return fmt.Sprintf("%.10s", s.Spec.Commit)
}

// sideServer is the server of a side: the installed one, or its revision
// built (from the build cache when it is there).
func sideServer(ctx context.Context, su *Setup, s Side) (*serverctl.Install, error) {
	if s.Install != nil {
		return s.Install, nil
	}
	prefix, err := su.Build.Builder(s.Repo, su.StateDir, su.Log, su.Live).Build(ctx, s.Spec.Commit)
	if err != nil {
		return nil, err
	}
	return serverctl.FindInstall(ctx, prefix)
}

// combinedOptionFile writes settings as an option file in the state
// directory, named by its content (the same settings are the same file, so
// a test's identity is the same when the search runs again), and reads it.
func combinedOptionFile(stateDir string, settings []serverctl.Setting) (serverctl.OptionFile, error) {
	dir := filepath.Join(stateDir, "option-files")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return serverctl.OptionFile{}, err
	}
	tmp := filepath.Join(dir, "new.cnf")
	if err := serverctl.WriteSettings(tmp, settings); err != nil {
		return serverctl.OptionFile{}, err
	}
	b, err := os.ReadFile(tmp)
	if err != nil {
		return serverctl.OptionFile{}, err
	}
	sum := sha256.Sum256(b)
	path := filepath.Join(dir, hex.EncodeToString(sum[:8])+".cnf")
	if err := os.Rename(tmp, path); err != nil {
		return serverctl.OptionFile{}, err
	}
	return serverctl.LoadOptionFile(path)
}
