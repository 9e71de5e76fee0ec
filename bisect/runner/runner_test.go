package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/internal/usage"
)

func TestParseHost(t *testing.T) {
	for _, c := range []struct {
		in, name, kind, label, root, exe, err string
	}{
		{in: "127.0.0.2", name: "ssh://127.0.0.2", kind: "ssh", label: "127.0.0.2", exe: "perfbisect"},
		{in: "ssh://bob@bench1:2222/srv/pb?perfbisect=/opt/pb/perfbisect", name: "ssh://bob@bench1:2222/srv/pb", kind: "ssh", label: "bob@bench1:2222", root: "/srv/pb", exe: "/opt/pb/perfbisect"},
		{in: "slurm://node7/scratch/pb?partition=perf", name: "slurm://node7/scratch/pb", kind: "slurm", label: "slurm:node7", root: "/scratch/pb", exe: "perfbisect"},
		{in: "", err: "empty"},
		{in: "ftp://h", err: `unknown kind "ftp"`},
		{in: "ssh://h?flavor=x", err: `unknown setting "flavor"`},
		{in: "ssh://h?partition=x", err: `unknown setting "partition"`},
		{in: "slurm://me@node1", err: "no user or port"},
		{in: "ssh:///root", err: "no host"},
		{in: "ssh:/bench6/srv", err: "a bare host name has no"},
		{in: "ssh://bench1/srv//pb/", name: "ssh://bench1/srv/pb", kind: "ssh", label: "bench1", root: "/srv/pb", exe: "perfbisect"},
		{in: "bob@bench1", name: "ssh://bob@bench1", kind: "ssh", label: "bob@bench1", exe: "perfbisect"},
	} {
		h, err := ParseHost(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, usage.Err) || !strings.Contains(err.Error(), "want ssh://") {
				t.Errorf("ParseHost(%q): error %v, want a usage error with %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseHost(%q): %v", c.in, err)
			continue
		}
		kind, exe := "", ""
		switch e := h.Engine.(type) {
		case *SSH:
			kind, exe = "ssh", e.Perfbisect
		case *Slurm:
			kind, exe = "slurm", e.Perfbisect
			if e.Partition != "perf" || e.Node != "node7" {
				t.Errorf("ParseHost(%q): node %q partition %q", c.in, e.Node, e.Partition)
			}
		}
		if kind != c.kind || h.Label != c.label || h.Root != c.root || exe != c.exe || h.Name != c.name {
			t.Errorf("ParseHost(%q) = %s %q root %q exe %q name %q; want %s %q root %q exe %q name %q", c.in, kind, h.Label, h.Root, exe, h.Name, c.kind, c.label, c.root, c.exe, c.name)
		}
	}
}

func TestSrunFailed(t *testing.T) {
	for tail, want := range map[string]bool{
		"srun: error: pbnode1: task 0: Exited with exit code 1":                             false,
		"progress | srun: error: Unable to allocate resources: Invalid node name specified": true,
		"srun: error: Node failure on pbnode1 | srun: Job step aborted":                     true,
		"a task's own last line": false,
	} {
		if got := srunFailed(tail); got != want {
			t.Errorf("srunFailed(%q) = %v, want %v", tail, got, want)
		}
	}
}

// fakeHost is an Engine that answers the task command in process: a
// runner host for the pure layer's tests (the real ones are the e2e's).
type fakeHost struct {
	name    string
	build   string // its perfbisect's build
	down    atomic.Bool
	mu      sync.Mutex
	entries map[string]bool
	tasks   []string // the commits of the tasks it ran
	running *atomic.Int32
	most    *atomic.Int32
	tps     float64
	broken  string // a commit whose server fails here alone
}

func (f *fakeHost) String() string { return f.name }

func (f *fakeHost) Task(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if f.down.Load() {
		return fmt.Errorf("%w: %s: connection refused", ErrUnreachable, f.name)
	}
	switch args[0] {
	case "id":
		return json.NewEncoder(stdout).Encode(Identity{Build: f.build, Version: "test", Host: f.name})
	case "has":
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.entries[args[len(args)-1]] {
			return &ExitError{Code: 1}
		}
		return nil
	case "receive":
		n, _ := io.Copy(io.Discard, stdin)
		if n == 0 {
			return &ExitError{Code: 1, Stderr: "empty archive"}
		}
		f.mu.Lock()
		f.entries[args[len(args)-1]] = true
		f.mu.Unlock()
		return nil
	case "run":
		t, err := ReadTask(stdin)
		if err != nil {
			return err
		}
		if n := f.running.Add(1); n > f.most.Load() {
			f.most.Store(n)
		}
		time.Sleep(50 * time.Millisecond)
		f.running.Add(-1)
		f.mu.Lock()
		f.tasks = append(f.tasks, t.Commit)
		have := f.entries[t.Entry]
		f.mu.Unlock()
		switch {
		case !have:
			return json.NewEncoder(stdout).Encode(Result{Error: "no install tree", Kind: KindMissing})
		case t.Commit == f.broken:
			return json.NewEncoder(stdout).Encode(Result{Untestable: &Untestable{Reason: "server crashed", Err: "signal 11"}})
		}
		return json.NewEncoder(stdout).Encode(Result{Runs: []bisect.Run{{Commit: t.Commit, TPS: f.tps}}, ServerOptions: []string{"--port=1"}})
	}
	return fmt.Errorf("unknown task command %v", args)
}

// fakeHosts makes a Measurer over hosts named names, whose builds are
// install trees made in a temporary directory.
func fakeHosts(t *testing.T, names ...string) (*Measurer, []*fakeHost) {
	t.Helper()
	self, err := Self("test")
	if err != nil {
		t.Fatal(err)
	}
	var running, most atomic.Int32
	var hosts []Host
	var fakes []*fakeHost
	for i, n := range names {
		f := &fakeHost{name: n, build: self.Build, entries: map[string]bool{}, running: &running, most: &most, tps: float64(100 * (i + 1))}
		fakes = append(fakes, f)
		hosts = append(hosts, Host{Name: n, Label: n, Engine: f})
	}
	dir := t.TempDir()
	build := func(ctx context.Context, commit string) (string, string, error) {
		if commit == "broken" {
			return "", "", &bisect.UntestableError{Commit: commit, Reason: "build failed", Err: errors.New("cc: error")}
		}
		p := filepath.Join(dir, commit)
		if err := os.MkdirAll(filepath.Join(p, "bin"), 0o755); err != nil {
			return "", "", err
		}
		_ = os.WriteFile(filepath.Join(p, "bin", "mariadbd"), []byte("#!/bin/sh\n"), 0o755)
		_ = os.WriteFile(filepath.Join(p, ".perfbisect-complete"), nil, 0o644)
		return p, "recipe/" + commit + "-plat", nil
	}
	var log bytes.Buffer
	m, err := New(Config{Build: build, Version: "test", Log: &log, Retry: time.Hour}, hosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.Close()
		if t.Failed() {
			t.Logf("log:\n%s", log.String())
		}
	})
	return m, fakes
}

// TestALostHostsRunsMoveAndItsBuildsShipOnce: a run asked of a host that
// cannot be reached is taken on the next one, which says so in its Host,
// and the lost host is not asked again before its retry; a build goes to
// a host once.
func TestALostHostsRunsMoveAndItsBuildsShipOnce(t *testing.T) {
	m, f := fakeHosts(t, "a", "b")
	ctx := context.Background()
	if _, err := m.Check(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		runs, err := m.MeasureOn(ctx, "b", "c1", 1)
		if err != nil || len(runs) != 1 || runs[0].Host != "b" || runs[0].TPS != 200 || runs[0].ServerOptions != "--port=1" {
			t.Fatalf("on b: %+v %v", runs, err)
		}
	}
	if len(f[1].entries) != 1 || len(f[1].tasks) != 2 {
		t.Errorf("b holds %d builds after %d tasks, want 1 after 2", len(f[1].entries), len(f[1].tasks))
	}
	f[1].down.Store(true)
	runs, err := m.MeasureOn(ctx, "b", "c2", 1)
	if err != nil || len(runs) != 1 || runs[0].Host != "a" || runs[0].TPS != 100 {
		t.Fatalf("b down: %+v %v, want a's run", runs, err)
	}
	f[1].down.Store(false) // back, but not asked again before its retry
	if runs, err := m.MeasureOn(ctx, "b", "c2", 1); err != nil || runs[0].Host != "a" {
		t.Errorf("b lost within its retry: the run went to %v (%v), want a", runs, err)
	}
	f[0].down.Store(true)
	m.hosts[1].lost = nil
	f[1].down.Store(true)
	if _, err := m.MeasureOn(ctx, "a", "c2", 1); err == nil || !strings.Contains(err.Error(), "every runner host is lost") {
		t.Errorf("both down: %v", err)
	}
}

// TestPlannedRunsGoAtOnce: a round's planned runs run on their hosts at
// the same time and are handed out in order; a planned run not asked for
// is dropped with the rest of its host's plan; a revision that does not
// build is the revision's, and its host's plan is left to MeasureOn.
func TestPlannedRunsGoAtOnce(t *testing.T) {
	m, f := fakeHosts(t, "a", "b")
	ctx := context.Background()
	m.PlanRound(ctx, []bisect.HostRun{{Host: "a", Commit: "g"}, {Host: "a", Commit: "x"}, {Host: "b", Commit: "g"}, {Host: "b", Commit: "x"}})
	for _, want := range []bisect.HostRun{{Host: "a", Commit: "g"}, {Host: "a", Commit: "x"}, {Host: "b", Commit: "g"}, {Host: "b", Commit: "x"}} {
		runs, err := m.MeasureOn(ctx, want.Host, want.Commit, 1)
		if err != nil || len(runs) != 1 || runs[0].Commit != want.Commit || runs[0].Host != want.Host {
			t.Fatalf("%v: %+v %v", want, runs, err)
		}
	}
	if most := f[0].most.Load(); most != 2 {
		t.Errorf("at most %d tasks at once, want 2 (one per host)", most)
	}
	m.PlanRound(ctx, []bisect.HostRun{{Host: "a", Commit: "g"}, {Host: "a", Commit: "x"}})
	if runs, err := m.MeasureOn(ctx, "a", "y", 1); err != nil || runs[0].Commit != "y" {
		t.Fatalf("an unplanned run: %+v %v", runs, err)
	}
	if len(m.pending["a"]) != 0 {
		t.Errorf("the rest of a's plan was kept: %d", len(m.pending["a"]))
	}
	m.PlanRound(ctx, []bisect.HostRun{{Host: "b", Commit: "broken"}})
	_, err := m.MeasureOn(ctx, "b", "broken", 1)
	if !bisect.IsUntestable(err) {
		t.Errorf("a revision that does not build: %v, want untestable", err)
	}
}

// TestAnotherPerfbisectIsRefused: a host whose perfbisect is another
// build is refused by name, as the user's to fix.
func TestAnotherPerfbisectIsRefused(t *testing.T) {
	m, f := fakeHosts(t, "a", "b")
	f[1].build = "0123456789abcdef"
	_, err := m.Check(context.Background())
	if err == nil || !errors.Is(err, usage.Err) || !strings.Contains(err.Error(), "runner host b runs another perfbisect") {
		t.Fatalf("Check: %v", err)
	}
}

// TestAHostDownAtTheStartIsLost: a host that cannot be reached when the
// session starts (or resumes) is taken out, not fatal; all of them down
// is the hosts' problem.
func TestAHostDownAtTheStartIsLost(t *testing.T) {
	m, f := fakeHosts(t, "a", "b")
	f[0].down.Store(true)
	ids, err := m.Check(context.Background())
	if err != nil || ids[0].Build != "" || ids[1].Host != "b" {
		t.Fatalf("Check with a down: %+v %v", ids, err)
	}
	runs, err := m.MeasureOn(context.Background(), "a", "c1", 1)
	if err != nil || runs[0].Host != "b" {
		t.Errorf("a run for the lost a: %+v %v, want b's", runs, err)
	}
	m2, f2 := fakeHosts(t, "a", "b")
	f2[0].down.Store(true)
	f2[1].down.Store(true)
	if _, err := m2.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "no runner host can be reached") {
		t.Errorf("Check with both down: %v", err)
	}
}

// TestOneHostsFailureIsNotTheRevisions: a revision whose server fails on
// one host alone is measured on another (that host's problem), and is
// untestable only when every host says so; an install tree deleted on a
// host is shipped again.
func TestOneHostsFailureIsNotTheRevisions(t *testing.T) {
	m, f := fakeHosts(t, "a", "b")
	ctx := context.Background()
	f[0].broken = "c1"
	m.PlanRound(ctx, []bisect.HostRun{{Host: "a", Commit: "c1"}, {Host: "b", Commit: "c2"}})
	runs, err := m.MeasureOn(ctx, "a", "c1", 1)
	if err != nil || runs[0].Host != "b" {
		t.Fatalf("c1, broken on a alone: %+v %v, want b's run", runs, err)
	}
	if runs, err := m.MeasureOn(ctx, "b", "c2", 1); err != nil || runs[0].Commit != "c2" {
		t.Fatalf("b's planned run after: %+v %v", runs, err)
	}
	f[1].broken = "c1"
	if _, err := m.MeasureOn(ctx, "a", "c1", 1); !bisect.IsUntestable(err) {
		t.Errorf("c1 broken on both: %v, want untestable", err)
	}
	f[1].mu.Lock()
	f[1].entries = map[string]bool{} // deleted on the host
	f[1].mu.Unlock()
	if runs, err := m.MeasureOn(ctx, "b", "c2", 1); err != nil || runs[0].Host != "b" || !f[1].entries["recipe/c2-plat"] {
		t.Errorf("c2 after b lost its trees: %+v %v, shipped again %v", runs, err, f[1].entries["recipe/c2-plat"])
	}
}
