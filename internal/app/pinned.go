package app

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/perfbisect/perfbisect/bisect/explain"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/bisect/report"
	"github.com/perfbisect/perfbisect/serverctl"
	"github.com/perfbisect/perfbisect/stats"
)

// pinSettings answers whether the settings the two servers run with
// differently carry the head's slowdown: it writes the head's option file
// with the base's values of those settings (report.PinnedDoc.OptionFile),
// measures runs runs each of the base, the head under it and the head as
// it is, interleaved and unprofiled (their counters and variables go under
// out/pinned), and compares the pinned head's change with the head's. A pinned value the head's server did not take (an option
// on its command line wins over the file) is said after its first run,
// and nothing is concluded. It is for two sides under one option file
// that differ in their servers' defaults (a commit that changed one):
// doc.Pinned stays nil when the files differ (which-setting's question),
// when nothing differs or when the head is not slower. Settings the head's
// server does not take as options are left out, named. Errors: what ends a
// measurement (interruption, the machine's failure).
func pinSettings(ctx context.Context, su *Setup, base, head Side, runs int, out string, doc *report.ExplainDoc) error {
	if len(doc.Settings) == 0 || doc.Kind == explain.KindNone || doc.TPSChange >= 0 {
		return nil
	}
	bf, hf := sideOptionFile(su, base), sideOptionFile(su, head)
	if bf.Path != hf.Path || bf.Digest != hf.Digest {
		return nil
	}
	in, err := sideServer(ctx, su, head)
	if err != nil {
		return err
	}
	var set *serverctl.OptionFileSet
	if !hf.IsZero() {
		if set, err = hf.Groups(serverctl.ServerGroups(in)); err != nil {
			return fmt.Errorf("read %s: %w", hf.Path, err)
		}
	} else {
		set = &serverctl.OptionFileSet{}
	}
	p := &report.PinnedDoc{Runs: runs}
	var changes []serverctl.SettingChange
	for _, s := range doc.Settings {
		if s.Base == explain.NoValue {
			p.LeftOut = append(p.LeftOut, s.Name+": the base's server has no such variable")
			continue
		}
		to := serverctl.Setting{Name: s.Name, Value: s.Base, HasValue: true}
		if err := in.Accepts(ctx, to); err != nil {
			p.LeftOut = append(p.LeftOut, fmt.Sprintf("%s: not an option of the head's server (%v)", s.Name, lastLine(err.Error())))
			continue
		}
		changes = append(changes, serverctl.SettingChange{Key: to.Key(), To: &to})
		p.Settings = append(p.Settings, s.Name+"="+s.Base)
	}
	if len(changes) == 0 {
		doc.Pinned = p
		return nil
	}
	of, err := combinedOptionFile(su.StateDir, serverctl.ApplyChanges(set, changes))
	if err != nil {
		return err
	}
	p.OptionFile = of.Path
	pinned := head
	pinned.Arg = fmt.Sprintf("%s with the base's %s", head.Arg, strings.Join(p.Settings, " "))
	pinned.Spec.OptionFile = of
	pinned.Key = sideKey(pinned, true)
	pinned.Spec.Name = pinned.Arg
	if su.Sides == nil { // start's sides are plain commits
		su.Sides = map[string]measure.Side{}
	}
	su.Sides[pinned.Key] = pinned.Spec
	fmt.Fprintf(su.Log, "explain: the servers differ in %s: measuring %s, the base and the head, %s each, interleaved\n",
		Counted(len(doc.Settings), "setting"), pinned.Arg, Counted(runs, "run"))
	// The counters and variables only (no perf): what the pinned server
	// runs with is checked after its first run.
	prof := &explain.Profiler{Dir: filepath.Join(out, "pinned"), NoPerf: true, Names: map[string]string{base.Key: "base", pinned.Key: "pinned", head.Key: "head"}}
	su.Probe, su.ProbeLabel = prof.Probe, "pinned-settings run"
	defer func() { su.Probe, su.ProbeLabel = nil, "" }()
	m := su.Measurer(func() int64 { return 0 })
	var tps [3][]float64 // base, pinned, head
	for n := range runs {
		for i, sd := range []Side{base, pinned, head} {
			r, err := m.Measure(ctx, sd.Key, 1)
			if err != nil {
				return explainError(ctx, sd, err)
			}
			tps[i] = append(tps[i], r[0].TPS)
			doc.Seconds += r[0].Wall.Seconds()
			if i != 1 || n > 0 {
				continue
			}
			// The first pinned run says whether the server took the
			// values: if not, measuring on says nothing.
			er, err := explain.ReadRun(r[0].Facts[measure.ProbeFact])
			if err != nil {
				return With(Failure, fmt.Errorf("pinned run of %s: %w", pinned.Describe(), err))
			}
			for _, s := range doc.Settings {
				v, ok := er.Variables[s.Name]
				switch {
				case !slices.Contains(p.Settings, s.Name+"="+s.Base) || v == s.Base:
				case !ok:
					p.NotTaken = append(p.NotTaken, fmt.Sprintf("%s: no such variable", s.Name))
				default:
					p.NotTaken = append(p.NotTaken, fmt.Sprintf("%s is %s, not %s", s.Name, v, s.Base))
				}
			}
			if len(p.NotTaken) > 0 {
				doc.Pinned = p
				return nil
			}
		}
	}
	p.BaseTPS, p.PinnedTPS, p.HeadTPS = stats.Median(tps[0]), stats.Median(tps[1]), stats.Median(tps[2])
	p.Change, p.HeadChange = p.PinnedTPS/p.BaseTPS-1, p.HeadTPS/p.BaseTPS-1
	lo, hi := explain.PairRange(tps[0], tps[1])
	p.Lo, p.Hi, p.Coverage = lo/p.BaseTPS, hi/p.BaseTPS, explain.Coverage(runs, runs)
	p.Verdict = pinnedVerdict(p.Change, p.Lo, p.Hi, p.HeadChange)
	doc.Pinned = p
	return nil
}

// pinnedVerdict says how much of the head's fall (headChange, negative;
// measured in the same runs) the pinned settings take away, from the
// pinned head's change against the base and its interval: all of it when
// at most a quarter of the fall remains and the interval excludes half of
// it; none when three quarters or more remain and the interval excludes
// half of it taken away; part of it when the interval excludes both no
// change and the whole fall; else undecided (the runs are too few or too
// noisy; so when the head is not slower in them).
func pinnedVerdict(change, lo, hi, headChange float64) string {
	if headChange >= 0 {
		return report.PinnedUndecided
	}
	remains := change / headChange
	switch {
	case remains <= 0.25 && lo > headChange/2:
		return report.PinnedAll
	case remains >= 0.75 && hi < headChange/2:
		return report.PinnedNone
	case hi < 0 && lo > headChange:
		return report.PinnedPart
	}
	return report.PinnedUndecided
}

// sideOptionFile is the option file a side runs with: its own, or the
// shared one.
func sideOptionFile(su *Setup, s Side) serverctl.OptionFile {
	if !s.Spec.OptionFile.IsZero() {
		return s.Spec.OptionFile
	}
	return su.OptionFile
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
