package measure

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/testenv"
)

// TestRunsRotateOverLayouts: with Builder.Layouts 3 the fixture's build
// links its server (the fixture's mariadbd launcher, a real CMake target)
// again with lld in three shuffled layouts, kept in its install entry; its
// runs rotate over them, each run's fact naming its layout; a builder that
// wants 4 builds the entry again.
func TestRunsRotateOverLayouts(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools, testenv.LLD)
	repo, rev := fixtureGood(t)
	state := t.TempDir()
	var log strings.Builder
	b := &build.Builder{Repo: repo, StateDir: state, Layouts: 3, Log: &log}
	o := bench.DefaultOptions()
	o.Workload, o.TableSize, o.Threads, o.Time, o.RangeSize = "oltp_point_select", 1000, 1, 500*time.Millisecond, 100
	m := New(Config{Workload: bench.OLTP{Options: o}, Builder: b, StateDir: state, Log: &log})
	runs, err := m.Measure(context.Background(), rev, 4)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	prefix, _ := b.InstallDir(rev)
	bins := build.Layouts(prefix)
	t.Logf("layouts %v\n%s", bins, log.String())
	if len(bins) != 3 {
		t.Fatalf("%d layouts in %s, want 3", len(bins), prefix)
	}
	// In turn, from a layout drawn at random (a resumed session does not
	// begin again on the first).
	first := 0
	fmt.Sscanf(runs[0].Facts[bisect.FactLayout], "%d of 3", &first)
	for i, r := range runs {
		if want := fmt.Sprintf("%d of 3", (first-1+i)%3+1); first == 0 || r.Facts[bisect.FactLayout] != want {
			t.Errorf("run %d: layout %q, want %q", i+1, r.Facts[bisect.FactLayout], want)
		}
	}
	// The fixture's launcher execs the system server: the layouts are
	// checked by running them.
	for _, bin := range bins {
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Ver") {
			t.Errorf("%s --version: %v %s", bin, err, out)
		}
	}
	if n := strings.Count(log.String(), "linked again by lld"); n != 3 {
		t.Errorf("%d relinks said, want 3", n)
	}
	if !b.Cached(rev) {
		t.Errorf("the entry with its 3 layouts is not cached")
	}
	b4 := &build.Builder{Repo: repo, StateDir: state, Layouts: 4}
	if b4.Cached(rev) {
		t.Errorf("an entry with 3 layouts is cached for a builder that wants 4")
	}
	log.Reset()
	b4.Log = &log
	if _, err := b4.Build(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	if n := len(build.Layouts(prefix)); n != 4 || !strings.Contains(log.String(), "cached without 4 code layouts") {
		t.Errorf("after a build wanting 4: %d layouts; log:\n%s", n, log.String())
	}
}

// TestEveryRunHasItsLayout: with build.LayoutPerRun the fixture's build keeps
// its server's link inputs in its entry (debug sections left out) instead of
// layouts; every run links a layout of its own from them (its fact names
// the seed, seeds differ) and removes it after the run; a builder that wants
// kept layouts links them from the inputs, not building; inputs that no longer link
// fail the run, naming the setting, the seed and the entry.
func TestEveryRunHasItsLayout(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools, testenv.LLD)
	repo, rev := fixtureGood(t)
	state := t.TempDir()
	var log strings.Builder
	b := &build.Builder{Repo: repo, StateDir: state, Layouts: build.LayoutPerRun, Log: &log}
	o := bench.DefaultOptions()
	o.Workload, o.TableSize, o.Threads, o.Time, o.RangeSize = "oltp_point_select", 1000, 1, 500*time.Millisecond, 100
	m := New(Config{Workload: bench.OLTP{Options: o}, Builder: b, StateDir: state, Log: &log})
	runs, err := m.Measure(context.Background(), rev, 3)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	prefix, _ := b.InstallDir(rev)
	t.Logf("%s", log.String())
	if !build.HasLinkKit(prefix) || len(build.Layouts(prefix)) != 0 {
		t.Fatalf("entry %s: link inputs %v, %d layouts; want inputs, no layouts", prefix, build.HasLinkKit(prefix), len(build.Layouts(prefix)))
	}
	if !strings.Contains(log.String(), "link inputs of mariadbd kept") {
		t.Errorf("the build did not say it kept the link inputs")
	}
	seeds := map[string]bool{}
	for i, r := range runs {
		if !strings.HasPrefix(r.Facts[bisect.FactLayout], "seed ") || seeds[r.Facts[bisect.FactLayout]] {
			t.Errorf("run %d: layout %q, want a seed of its own", i+1, r.Facts[bisect.FactLayout])
		}
		seeds[r.Facts[bisect.FactLayout]] = true
	}
	if left, _ := os.ReadDir(filepath.Join(state, "layouts")); len(left) != 0 {
		t.Errorf("%d layouts left in %s after the runs", len(left), filepath.Join(state, "layouts"))
	}
	// A layout linked from the inputs runs.
	bin, err := build.LinkLayout(context.Background(), prefix, 42, t.TempDir(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "Ver") {
		t.Errorf("%s --version: %v %s", bin, err, out)
	}
	// K layouts are not the inputs, but link from them: no build.
	b3 := &build.Builder{Repo: repo, StateDir: state, Layouts: 3}
	if b3.Cached(rev) {
		t.Errorf("an entry with link inputs is cached for a builder that wants 3 layouts")
	}
	var log3 strings.Builder
	b3.Log = &log3
	if _, err := b3.Build(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	if n := len(build.Layouts(prefix)); n != 3 || !build.HasLinkKit(prefix) || strings.Contains(log3.String(), "building it again") ||
		!strings.Contains(log3.String(), "code layout 3 of 3 linked from its kept link inputs") {
		t.Errorf("3 layouts wanted of an entry with link inputs: %d layouts, inputs kept %v; log:\n%s", n, build.HasLinkKit(prefix), log3.String())
	}
	// Inputs that no longer link: the run fails, naming --layouts run.
	objs, _ := filepath.Glob(filepath.Join(prefix, ".perfbisect-link", "CMakeFiles", "mariadbd.dir", "*", "*.o"))
	if len(objs) == 0 {
		objs, _ = filepath.Glob(filepath.Join(prefix, ".perfbisect-link", "CMakeFiles", "mariadbd.dir", "*.o"))
	}
	if len(objs) == 0 {
		t.Fatalf("no object among the link inputs of %s", prefix)
	}
	for _, f := range objs {
		if err := os.WriteFile(f, []byte("not an object"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m2 := New(Config{Workload: bench.OLTP{Options: o}, Builder: b, StateDir: state, Log: io.Discard})
	if _, err := m2.Measure(context.Background(), rev, 1); err == nil || !strings.Contains(err.Error(), "code layouts (--layouts run): link a code layout (seed ") || !strings.Contains(err.Error(), prefix) {
		t.Errorf("a run from inputs that do not link: %v, want the link's failure", err)
	}
}
