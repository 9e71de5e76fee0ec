package measure

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
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
	fmt.Sscanf(runs[0].Facts["layout"], "%d of 3", &first)
	for i, r := range runs {
		if want := fmt.Sprintf("%d of 3", (first-1+i)%3+1); first == 0 || r.Facts["layout"] != want {
			t.Errorf("run %d: layout %q, want %q", i+1, r.Facts["layout"], want)
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
