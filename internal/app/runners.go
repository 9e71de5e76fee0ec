package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/measure"
	"github.com/perfbisect/perfbisect/bisect/runner"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/diskfault"
	"github.com/perfbisect/perfbisect/internal/usage"
	"github.com/perfbisect/perfbisect/serverctl"
)

// taskSettings are the measurement's settings as a runner host's task
// carries them (runner.Task.Settings): the request as typed, with the
// files it names (the option file, a workload file) carried whole, since
// the host has none of this machine's files.
type taskSettings struct {
	Workload     WorkloadRequest
	Driver       string
	OptionFile   *taskFile `json:",omitempty"`
	WorkloadFile *taskFile `json:",omitempty"` // a SQL workload file or a sysbench script given by path
	ServerCPUs   string    `json:",omitempty"`
	ClientCPUs   string    `json:",omitempty"`
	SnapshotSize string
	FreshDatadir bool `json:",omitempty"`
	StartTimeout string
}

// taskFile is a file a task carries: its base name and content.
type taskFile struct {
	Name string
	Text string
}

// parseRunners reads the runner hosts (--runner) and checks what they do
// not go with yet. Errors: usage, naming the setting.
func (s *Setup) parseRunners(req SetupRequest) error {
	seen := map[string]bool{}
	for _, r := range req.Runners {
		h, err := runner.ParseHost(r)
		if err != nil {
			return With(Usage, err)
		}
		if seen[h.Name] {
			return usageError("{runner} %s given twice (two hosts with one root would wait for each other): give each host once, or another root", h.Name)
		}
		seen[h.Name] = true
		s.Runners = append(s.Runners, h)
	}
	if len(s.Runners) == 0 {
		return nil
	}
	switch {
	case req.Search == nil:
		return usageError("{runner}: only start takes its runs on runner hosts so far")
	case !s.Build.LayoutsAuto && s.Build.Layouts != 1:
		return usageError("{runner} and {layouts} %s do not go together yet: a host receives a build's own server", s.Build.layoutsText())
	case s.Build.Binaries != nil:
		return usageError("{runner} and {binaries} do not go together yet: the release tarballs are measured here")
	case includes(s.OptionFile.Path):
		return usageError("{my-cnf} %s has !include or !includedir lines: a runner host receives the option file alone (and would read its own files there); put the settings in one file", s.OptionFile.Path)
	case req.SysbenchPath != "":
		return usageError("{sysbench-path} names a file of this machine: on runner hosts sysbench is the one in their PATH; leave it out")
	}
	return nil
}

// encodeTask is the task settings of the request req (Configure's).
func (s *Setup) encodeTask() (json.RawMessage, error) {
	req := s.req
	ts := taskSettings{Workload: req.Workload, Driver: req.Driver, ServerCPUs: req.ServerCPUs, ClientCPUs: req.ClientCPUs,
		SnapshotSize: req.SnapshotCacheSize, FreshDatadir: req.FreshDatadir, StartTimeout: req.StartTimeout}
	if !s.OptionFile.IsZero() {
		b, err := os.ReadFile(s.OptionFile.Path)
		if err != nil {
			return nil, usageError("{my-cnf}: %v", err)
		}
		ts.OptionFile = &taskFile{Name: filepath.Base(s.OptionFile.Path), Text: string(b)}
	}
	if k := bench.WorkloadKind(req.Workload.Name); k == bench.KindSQL || k == bench.KindScript {
		if b, err := os.ReadFile(req.Workload.Name); err == nil {
			ts.WorkloadFile = &taskFile{Name: filepath.Base(req.Workload.Name), Text: string(b)}
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, usageError("{workload}: %v", err)
		}
	}
	return json.Marshal(ts)
}

// RunnerMeasurer is the Measurer of a session on the runner hosts (after
// Lock): local builds revisions here (Setup.Measurer's), the hosts
// measure them. Close it when the session ends.
func (s *Setup) RunnerMeasurer(ctx context.Context, local *measure.Measurer, version string) (*runner.Measurer, error) {
	settings, err := s.encodeTask()
	if err != nil {
		return nil, err
	}
	m, err := runner.New(runner.Config{Build: local.Build, Settings: settings, Version: version, Log: s.Log,
		Label: func(c string) string { return fmt.Sprintf("%.10s", c) }}, s.Runners)
	if err != nil {
		return nil, With(OutcomeOf(err), err)
	}
	ids, err := m.Check(ctx)
	if err != nil {
		return nil, With(OutcomeOf(err), err)
	}
	for i, id := range ids {
		if id.Build != "" {
			fmt.Fprintf(s.Log, "runner host %s: %s, %d CPUs, perfbisect %s\n", s.Runners[i].Label, id.Host, id.CPUs, id.Version)
		}
	}
	return m, nil
}

// DefaultRunnerRoot is where `perfbisect task` keeps the install trees it
// received, its datadir snapshots and its runs when --root is not given:
// the user's cache directory.
func DefaultRunnerRoot() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no --root and no cache directory: %w", err)
	}
	return filepath.Join(dir, "perfbisect", "runner"), nil
}

// RunTask carries out the task read from in on this host (`perfbisect
// task run`): its settings checked as the coordinator's were, the install
// tree received before (root/installs), the runs measured under root's
// lock, and the result written to out as JSON, whatever happened. The
// task ends early when hold (nil: never), the input the coordinator holds
// open after the task, ends: the coordinator went away. It returns
// the result's outcome for the exit code: nil when runs were measured or
// the revision is untestable (the result says which), usage for a task or
// settings that are wrong (or another perfbisect's), failure for this
// host's machine or a result that cannot be written.
func RunTask(ctx context.Context, root, version string, in, hold io.Reader, out io.Writer, log io.Writer) error {
	res := runTask(ctx, root, version, in, hold, log)
	if name, err := os.Hostname(); err == nil {
		res.Host = name
	}
	if err := json.NewEncoder(out).Encode(res); err != nil {
		return With(Failure, err)
	}
	switch res.Kind {
	case runner.KindUsage, runner.KindVersion:
		return With(Usage, errors.New(res.Error))
	case runner.KindMachine:
		return With(Failure, errors.New(res.Error))
	}
	return nil
}

func runTask(ctx context.Context, root, version string, in, hold io.Reader, log io.Writer) runner.Result {
	fail := func(kind string, err error) runner.Result { return runner.Result{Error: err.Error(), Kind: kind} }
	t, err := runner.ReadTask(in)
	if err != nil {
		return fail(runner.KindUsage, err)
	}
	if hold != nil {
		var cancel context.CancelFunc
		ctx, cancel = runner.WatchInput(ctx, hold)
		defer cancel()
	}
	id, err := runner.Self(version)
	if err != nil {
		return fail(runner.KindMachine, err)
	}
	if t.Perfbisect != id.Build {
		return fail(runner.KindVersion, fmt.Errorf("this host's perfbisect is build %.12s (%s), the coordinator's %.12s: every host runs the same perfbisect", id.Build, version, t.Perfbisect))
	}
	var ts taskSettings
	if err := json.Unmarshal(t.Settings, &ts); err != nil {
		return fail(runner.KindUsage, fmt.Errorf("task settings: %v", err))
	}
	installs := filepath.Join(root, "installs")
	if !build.HasEntry(installs, t.Entry) {
		return fail(runner.KindMissing, fmt.Errorf("no install tree %s under %s: it was not received, or was deleted since (perfbisect task receive)", t.Entry, installs))
	}
	build.UseEntry(installs, t.Entry) // the least recently used go first
	if err := os.MkdirAll(filepath.Join(root, "history"), 0o700); err != nil {
		return fail(runner.KindMachine, err)
	}
	unlock, err := lockRoot(ctx, root, log)
	if err != nil {
		return fail(runner.KindMachine, err)
	}
	defer unlock()
	su := &Setup{Log: log}
	side := measure.Side{Name: t.Label, Basedir: build.EntryDir(installs, t.Entry)}
	w := ts.Workload
	if side.OptionFile, err = ts.placeFile(root, ts.OptionFile, log); err != nil {
		return fail(runner.KindMachine, err)
	}
	if ts.WorkloadFile != nil {
		p, err := writeTaskFile(root, ts.WorkloadFile)
		if err != nil {
			return fail(runner.KindMachine, err)
		}
		w.Name = p
	}
	// The coordinator checked these settings; failing here, they are this
	// host's (no sysbench, fewer CPUs): its machine's problem.
	if su.Workload, err = workload(ctx, w, ts.Driver, "", log); err != nil {
		return fail(runner.KindMachine, fmt.Errorf("this host: %s", usage.TextNamed(err, func(n string) string { return "--" + n })))
	}
	if err := su.placement(SetupRequest{ServerCPUs: ts.ServerCPUs, ClientCPUs: ts.ClientCPUs, SnapshotCacheSize: ts.SnapshotSize,
		FreshDatadir: ts.FreshDatadir, StartTimeout: ts.StartTimeout}); err != nil {
		return fail(runner.KindMachine, fmt.Errorf("this host: %s", usage.TextNamed(err, func(n string) string { return "--" + n })))
	}
	m := measure.New(measure.Config{StateDir: root, OptionFile: side.OptionFile, Sides: map[string]measure.Side{t.Commit: side},
		Workload: su.Workload, Log: log, ServerCPUs: su.ServerCPUs, ClientCPUs: su.ClientCPUs,
		SnapshotBudget: su.SnapshotBudget, FreshDatadir: su.FreshDatadir, StartTimeout: su.StartTimeout, Setting: usage.Flag,
		HistoryFile: historyFile(root, t.Settings)})
	m.Tidy()
	runs, err := m.Measure(ctx, t.Commit, t.Runs)
	res := runner.Result{Runs: runs}
	for _, r := range runs {
		res.ServerOptions = append(res.ServerOptions, r.ServerOptions)
	}
	var u *bisect.UntestableError
	var de *diskfault.Error
	switch {
	case err == nil:
	case errors.As(err, &u):
		res.Untestable = &runner.Untestable{Reason: u.Reason, Err: fmt.Sprint(u.Err)}
	case errors.As(err, &de):
		res.Error, res.Kind = err.Error(), runner.KindMachine
	case errors.Is(err, usage.Err):
		res.Error, res.Kind = err.Error(), runner.KindUsage
	default:
		res.Error, res.Kind = err.Error(), runner.KindMachine
	}
	return res
}

// placeFile writes the task's option file under root and reads it as the
// coordinator did (zero when the task has none).
func (ts taskSettings) placeFile(root string, f *taskFile, log io.Writer) (serverctl.OptionFile, error) {
	if f == nil {
		return serverctl.OptionFile{}, nil
	}
	p, err := writeTaskFile(root, f)
	if err != nil {
		return serverctl.OptionFile{}, err
	}
	return optionFile(p, log)
}

// writeTaskFile writes a task's file under root/files/<its digest>/ (once;
// the same content is the same path, so its snapshots are reused) and
// returns its path.
func writeTaskFile(root string, f *taskFile) (string, error) {
	sum := sha256.Sum256([]byte(f.Name + "\x00" + f.Text))
	name := filepath.Base(f.Name)
	if name == "." || name == "/" || name == ".." {
		name = "file"
	}
	dir := filepath.Join(root, "files", hex.EncodeToString(sum[:8]))
	p := filepath.Join(dir, name)
	if b, err := os.ReadFile(p); err == nil && string(b) == f.Text {
		return p, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(f.Text), 0o600); err != nil {
		return "", err
	}
	return p, os.Rename(tmp, p)
}

// lockRoot takes root's state directory lock, waiting while another task
// (of another session) holds it, and reaps what a killed task left.
func lockRoot(ctx context.Context, root string, log io.Writer) (func(), error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	said := false
	for {
		unlock, err := LockAndReap(root, log)
		if err == nil {
			return unlock, nil
		}
		if !errors.Is(err, measure.ErrStateDirInUse) {
			return nil, err
		}
		if !said {
			fmt.Fprintf(log, "waiting for another task on this host: %v\n", err)
			said = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// ReceiveEntry is `perfbisect task receive KEY`: the install tree of key,
// read from in, kept under root/installs whole or not at all.
func ReceiveEntry(ctx context.Context, root, key string, in io.Reader) (string, error) {
	return build.ReceiveEntry(ctx, in, filepath.Join(root, "installs"), key)
}

// HasEntry is `perfbisect task has KEY`: whether root holds key's install
// tree.
func HasEntry(root, key string) bool {
	return build.HasEntry(filepath.Join(root, "installs"), key)
}

// historyFile is where a host keeps its runs' history for tasks of these
// settings (measure.Config.HistoryFile): one per measurement, so that a
// workload's levels are not another's.
func historyFile(root string, settings []byte) string {
	sum := sha256.Sum256(settings)
	return filepath.Join(root, "history", hex.EncodeToString(sum[:8])+".json")
}

// includes reports whether the option file at p has an !include or
// !includedir line.
func includes(p string) bool {
	if p == "" {
		return false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "!include") {
			return true
		}
	}
	return false
}
